import re
import typing
from pathlib import Path
from typing import Any, Literal

import msgspec
import pytest
import structlog

from assist.logs import _drop_when_quiet, quiet
from assist.settings import Index, Settings, SettingsError, variables


def test_defaults_and_light_slot_fallback():
    s = Settings.from_env({})
    assert s.ollama.model_name == "qwen3:1.7b"
    assert s.ollama.light_model == s.ollama.model_name
    assert s.ollama.light_host == s.ollama.host
    assert s.classifier.confidence_threshold == 0.85
    assert s.export.threshold == 500


def test_environment_overrides_are_typed():
    s = Settings.from_env(
        {
            "OLLAMA_MODEL_NAME_CONVERSATIONAL": "qwen3:0.6b",
            "OLLAMA_HOST_CONVERSATIONAL": "http://small:11434",
            "CLASSIFIER_CONFIDENCE_THRESHOLD": "0.9",
            "MAX_MESSAGE_CHARS": "100",
            "PLATFORM_PREFIXES": "You are a direct and concise assistant| Eres un asistente ",
            "AWS_DEFAULT_REGION": "eu-west-1",
        }
    )
    assert s.ollama.light_model == "qwen3:0.6b"
    assert s.ollama.light_host == "http://small:11434"
    assert s.classifier.confidence_threshold == 0.9
    assert s.api.max_message_chars == 100
    assert s.classifier.platform_prefixes == ("you are a direct and concise assistant", "eres un asistente")
    assert s.aws.region == "eu-west-1"


def test_the_llm_classifier_runs_only_when_ollama_host_is_set():
    assert Settings.from_env({}).ollama.host_explicit is False
    s = Settings.from_env({"OLLAMA_HOST": "http://gpu:11434"})
    assert s.ollama.host_explicit is True
    assert s.ollama.classifier_model == s.ollama.model_name
    assert Settings.from_env({"OLLAMA_MODEL_NAME_CLASSIFIER": "qwen3:0.6b"}).ollama.classifier_model == "qwen3:0.6b"


def test_the_shipped_classifier_is_the_default_and_none_switches_it_off():
    default = Settings.from_env({}).classifier.model_path
    assert default.endswith("/data/models/routing-classifier.json")
    assert Path(default).is_file()  # found from any working directory of the checkout
    assert Settings.from_env({"CLASSIFIER_MODEL_PATH": "none"}).classifier.model_path is None
    assert Settings.from_env({"CLASSIFIER_MODEL_PATH": "s3://b/m.json"}).classifier.model_path == "s3://b/m.json"


def test_a_bad_number_is_a_clear_error():
    with pytest.raises(SettingsError, match="CLASSIFIER_CONFIDENCE_THRESHOLD='high'"):
        Settings.from_env({"CLASSIFIER_CONFIDENCE_THRESHOLD": "high"})


def test_credentials_from_the_environment_are_left_to_the_default_chain():
    """Lambda's keys are temporary and valid only with AWS_SESSION_TOKEN: Settings never copies them, so boto3
    and LanceDB each read all three (and refresh them) from their own default chain."""
    env = {
        "AWS_ACCESS_KEY_ID": "ASIA123",
        "AWS_SECRET_ACCESS_KEY": "sekrit",
        "AWS_SESSION_TOKEN": "token",
        "INDEX_URI": "s3://b/i",
        "AWS_ENDPOINT_URL": "http://127.0.0.1:5000",
    }
    s = Settings.from_env(env)
    assert s.aws.emulator_keys == {}
    assert s.storage_options() == {"region": "us-east-1", "endpoint": "http://127.0.0.1:5000", "allow_http": "true"}
    assert s.session_backend == "dynamodb"  # the keys still say "this process talks to AWS"
    assert Settings.from_env({}).storage_options() == {}


def test_an_emulators_static_keys_stay_out_of_repr_and_reach_both_clients():
    s = Settings().with_(
        index={"uri": "s3://b/i"},
        aws={
            "endpoint_url": "http://127.0.0.1:5000",
            "emulator_access_key_id": "testing",
            "emulator_secret_access_key": "sekrit",
        },
    )
    assert "sekrit" not in repr(s)
    assert s.storage_options()["aws_secret_access_key"] == "sekrit"
    assert s.aws.emulator_keys["aws_access_key_id"] == "testing"
    assert s.with_(aws={"endpoint_url": None}).aws.emulator_keys == {}  # static keys never go to real AWS


ROOT = Path(__file__).resolve().parents[2]
#: (field, variable) of every row of docs/configuration.md's tables that names a variable
DOCUMENTED = re.findall(r"^\| `([\w.]+)` \| `([A-Z0-9_]+)`", (ROOT / "docs/configuration.md").read_text(), re.M)


def _field(section: str, name: str) -> msgspec.structs.FieldInfo:
    return next(f for f in msgspec.structs.fields(type(getattr(Settings(), section))) if f.name == name)


def _sample(typ: Any, variable: str) -> tuple[str, Any]:
    """A value to set a variable to, and what its field must then hold."""
    if typ is bool:
        return "On", True
    if typ is int:
        return "7", 7
    if typ is float:
        return "0.25", 0.25
    if typing.get_origin(typ) is tuple:
        return "A | b||", ("a", "b")
    if typing.get_origin(typ) is Literal:
        choice = typing.get_args(typ)[-1]
        return f" {choice.upper()} ", choice
    value = f"value-of-{variable}".ljust(40, ".")  # long enough for a signing key (32 bytes at least)
    return value, value


def _can_be_wrong(typ: Any) -> bool:
    """Numbers, flags and choices: not free text, nor a list of free text."""
    return str not in (typing.get_args(typ) or (typ,)) and typing.get_origin(typ) is not tuple


def test_every_documented_variable_reads_into_its_documented_field():
    assert dict(DOCUMENTED) == {field: env for env, field in variables().items()}, "docs and Settings disagree"
    samples = {env: _sample(_field(*field.split(".")).type, env) for field, env in DOCUMENTED}
    s = Settings.from_env({env: raw for env, (raw, _) in samples.items()})
    for field, env in DOCUMENTED:
        section, name = field.split(".")
        assert getattr(getattr(s, section), name) == samples[env][1], env


def test_every_variable_is_in_the_readme():
    readme = (ROOT / "README.md").read_text()
    assert [env for env in variables() if f"`{env}`" not in readme] == []


@pytest.mark.parametrize(
    ("variable", "field"),
    [(env, field) for field, env in DOCUMENTED if _can_be_wrong(_field(*field.split(".")).type)],
)
def test_a_value_that_does_not_parse_is_an_error_naming_its_variable(variable, field):
    with pytest.raises(SettingsError, match=f"^{variable}='maybe': expected "):
        Settings.from_env({variable: "maybe"})


def test_secrets_stay_out_of_repr():
    s = Settings.from_env({"OLLAMA_API_KEY": "sekrit-1", "EXPORT_HASH_KEY": "sekrit-2", "OLLAMA_HOST": "http://h"})
    assert "sekrit" not in repr(s)
    assert "http://h" in repr(s)
    assert (s.ollama.api_key, s.export.hash_key) == ("sekrit-1", "sekrit-2")


def test_overrides_change_only_what_they_name():
    s = Settings().with_(ollama={"host": "http://gpu:11434"}, index=Index(uri="s3://b/i"))
    assert (s.ollama.host, s.ollama.model_name, s.index.uri) == ("http://gpu:11434", "qwen3:1.7b", "s3://b/i")
    assert Settings().ollama.host == "http://127.0.0.1:11434"  # frozen: the original is untouched
    with pytest.raises(TypeError, match="hots"):
        Settings().with_(ollama={"hots": "x"})


def test_think_takes_a_boolean_or_a_level_and_one_model_on_one_host_gets_one_window():
    s = Settings.from_env(
        {
            "OLLAMA_THINK": "High",
            "OLLAMA_NUM_CTX_CONVERSATIONAL": "4096",
            "OLLAMA_MODEL_NAME_CONVERSATIONAL": "qwen3:0.6b",
        }
    )
    o = s.ollama
    assert (o.think, s.classifier.llm_think, o.rewrite_think) == ("high", "false", "false")
    assert o.num_ctx_for(o.host, "qwen3:1.7b") == 8192
    assert o.num_ctx_for(o.light_host, "qwen3:0.6b") == 4096
    same = Settings.from_env({"OLLAMA_NUM_CTX_CONVERSATIONAL": "4096"}).ollama  # light = main's model: main's window
    assert same.num_ctx_for(same.light_host, same.light_model) == 8192
    with pytest.raises(SettingsError, match="CLASSIFIER_LLM_THINK='maybe'"):
        Settings.from_env({"CLASSIFIER_LLM_THINK": "maybe"})


def test_quiet_drops_info_but_not_warnings():
    event = {"event": "retrieve.fused"}
    assert _drop_when_quiet(None, "info", event) is event
    with quiet():
        for method in ("debug", "info"):
            with pytest.raises(structlog.DropEvent):
                _drop_when_quiet(None, method, event)
        assert _drop_when_quiet(None, "warning", event) is event
    assert _drop_when_quiet(None, "info", event) is event
