"""The JSON formatter of docs/observability.md, for the structured-logging test: one JSON
object per record, with the job's fields when the record is about a job."""

import json
import logging

JOB_FIELDS = ("job_id", "task", "queue", "attempt")


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": self.formatTime(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        entry.update({name: getattr(record, name) for name in JOB_FIELDS if hasattr(record, name)})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)
