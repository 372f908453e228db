from django.db import migrations

PROJECTS = [
    ("Atlas", "Route planning for delivery vans", ["python", "postgresql", "graphs"], False),
    ("Beacon", "Alerting for hospital equipment", ["django", "redis", "websockets"], False),
    ("Cobalt", "Invoice reconciliation", ["python", "sql", "accounting"], True),
    ("Delta", "River level forecasts", ["statistics", "python", "maps"], False),
    ("Ember", "Wildfire risk dashboard", ["django", "maps", "javascript"], False),
    ("Fjord", "Ferry booking", ["django", "postgresql", "payments"], False),
    ("Gale", "Wind farm telemetry", ["redis", "timeseries", "python"], False),
]


def seed(apps, schema_editor):
    Project = apps.get_model("matching", "Project")
    for name, summary, skills, fails in PROJECTS:
        Project.objects.get_or_create(
            name=name,
            defaults={"summary": summary, "skills": skills, "fails_first_attempt": fails},
        )


def unseed(apps, schema_editor):
    apps.get_model("matching", "Project").objects.filter(name__in=[p[0] for p in PROJECTS]).delete()


class Migration(migrations.Migration):
    dependencies = [("matching", "0001_initial")]

    operations = [migrations.RunPython(seed, unseed)]
