"""Job definitions of the peer systems that ``bench/peers.py`` sets beside django-leasequeue.

Each module imports its queue library at the top, so import one only when that library is
installed (``pip install -e '.[bench]'``). ``common`` holds what every system's jobs share.
"""
