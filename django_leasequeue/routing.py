"""Websocket routes to include in a project's ASGI application (needs the ``channels`` extra).

from channels.auth import AuthMiddlewareStack
from channels.routing import ProtocolTypeRouter, URLRouter
from django_leasequeue.routing import websocket_urlpatterns

application = ProtocolTypeRouter({
    "http": django_asgi_app,
    "websocket": AuthMiddlewareStack(URLRouter(websocket_urlpatterns)),
})
"""

from django.urls import path

from django_leasequeue.consumers import JobProgressConsumer
from django_leasequeue.live import WEBSOCKET_PATH

websocket_urlpatterns = [
    path(f"{WEBSOCKET_PATH.lstrip('/')}<uuid:job_id>/", JobProgressConsumer.as_asgi()),
]
