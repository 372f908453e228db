"""Where the tests find the app's permissions by codename."""

# Content types of the app's permissions: its models', and the pause permission's own
# (django_leasequeue/control/permission.py).
APP_LABELS = ("leasequeue", "django_leasequeue")
