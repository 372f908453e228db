"""Websocket routes to include in a project's ASGI application (needs the ``channels`` extra).

django_asgi_app = get_asgi_application()  # sets Django up: import the routes after it

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from django_leasequeue.routing import websocket_urlpatterns

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AllowedHostsOriginValidator(
        AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
    ),
})
"""

from django.urls import path

from django_leasequeue.progress.consumers import JobProgressConsumer, WorkflowProgressConsumer
from django_leasequeue.progress_events import WEBSOCKET_PATH, WORKFLOW_WEBSOCKET_PATH

websocket_urlpatterns = [
    path(f"{WEBSOCKET_PATH.lstrip('/')}<uuid:job_id>/", JobProgressConsumer.as_asgi()),
    path(
        f"{WORKFLOW_WEBSOCKET_PATH.lstrip('/')}<uuid:workflow_id>/",
        WorkflowProgressConsumer.as_asgi(),
    ),
]
