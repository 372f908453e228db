"""What the test packages share, and no tests: a test module imports from here (or from its own
package's helpers), never from another test module.

- ``settings``: the test project's settings (``DJANGO_SETTINGS_MODULE``), with the variants
  that some tests' processes run with beside them;
- ``tasks``: the tasks the tests enqueue, ``basic`` and one module per subject;
- the test project's app (label ``tests``): ``apps``, ``models``, ``migrations``,
  ``templates``, and its ``urls``, ``views`` and ``asgi`` applications;
- the helpers: ``helpers``, ``processes``, ``leftovers`` and ``flush`` (pytest plugins, see
  conftest.py), ``servers``, ``proxy``, ``docs_snippets``, ``hook_examples``, ``otel_export``,
  ``json_logs``, ``signal_log``, ``permissions`` and ``viewers``.
"""
