"""A test module's own widget table: every refusal counts against its address (ADR 0118), and the whole suite
asks from 127.0.0.1, so modules sharing one table would share one address window and refuse each other."""

from __future__ import annotations

from assist.aws.clients import client
from assist.settings import Settings
from assist_dev.local.resources import ensure_resources


def own_widget_table(settings: Settings, name: str) -> Settings:
    """`settings` with the widget table `assist-widget-<name>`, made on the test's emulator when missing."""
    s = settings.with_(widget={"table": f"assist-widget-{name}"})
    ensure_resources(s, client("dynamodb", s), client("s3", s))
    return s
