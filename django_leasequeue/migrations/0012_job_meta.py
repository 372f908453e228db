import django.db.models.expressions
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('leasequeue', '0011_queue_control'),
    ]

    operations = [
        migrations.AddField(
            model_name='job',
            name='meta',
            field=models.JSONField(blank=True, db_default=django.db.models.expressions.Value({}, models.JSONField())),
        ),
    ]
