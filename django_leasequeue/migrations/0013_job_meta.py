import django.db.models.expressions
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leasequeue', '0012_workflow_fan_in'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='meta',
            field=models.JSONField(blank=True, db_default=django.db.models.expressions.Value({}, models.JSONField())),
        ),
    ]
