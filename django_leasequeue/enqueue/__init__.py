"""The one enqueue path (``service.Enqueuer``): the backend, workflows and schedules call it."""
