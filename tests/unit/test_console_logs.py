"""What a person at a terminal sees of the logs: WARNING and above unless asked for more, enums as their
values, and never a metric record (EMF is for CloudWatch's log parser)."""

from __future__ import annotations

import io
import logging
import sys

from assist.cli import verbose
from assist.contracts import Degraded
from assist.logs import configure, get_logger, level_for
from assist.metrics import exported
from assist.settings import Settings


def test_a_terminal_gets_warnings_unless_a_level_is_named():
    assert level_for("", as_json=False, terminal=True) == logging.WARNING
    assert level_for("", as_json=True, terminal=True) == logging.INFO  # LOG_FORMAT=json: a machine reads it
    assert level_for("", as_json=True, terminal=False) == logging.INFO  # a pipe, a file, CloudWatch
    assert level_for("debug", as_json=False, terminal=True) == logging.DEBUG
    assert level_for("INFO", as_json=False, terminal=True) == logging.INFO


def test_the_verbose_flags_are_counted_wherever_they_stand():
    assert verbose(["ask", "hi", "-v"]) == (["ask", "hi"], 1)
    assert verbose(["-vv", "ask", "hi"]) == (["ask", "hi"], 2)
    assert verbose(["--verbose", "index", "docs"]) == (["index", "docs"], 1)
    assert verbose(["ask", "hi"]) == (["ask", "hi"], 0)


def test_the_console_prints_enum_values_and_no_metric_record():
    shown, suite = io.StringIO(), sys.stderr
    sys.stderr = shown  # the console logger writes to the stderr it finds when configured
    try:
        configure(Settings().with_(logs={"format": "console", "level": "INFO"}), force=True)
        get_logger("t").warning("answer.degraded", degraded=[Degraded.LLM_UNAVAILABLE], reason=Degraded.DEADLINE)
        exported(3)  # an EMF record, at INFO: shown as JSON to CloudWatch, never on a console
    finally:
        sys.stderr = suite
        configure(Settings().with_(logs={"format": "console"}), force=True)  # as the suite had them
    err = shown.getvalue()
    assert "degraded=['llm_unavailable']" in err
    assert "reason=deadline" in err
    assert "<Degraded" not in err
    assert "_aws" not in err
    assert "metrics.emf" not in err
