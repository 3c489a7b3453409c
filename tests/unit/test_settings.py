from pathlib import Path

import pytest

from assist.settings import Settings, SettingsError


def test_defaults_and_light_slot_fallback():
    s = Settings.from_env({})
    assert s.ollama_model_name == "qwen3:1.7b"
    assert s.light_model == s.ollama_model_name
    assert s.light_host == s.ollama_host
    assert s.classifier_confidence_threshold == 0.85
    assert s.classifier_export_threshold == 500


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
    assert s.light_model == "qwen3:0.6b"
    assert s.light_host == "http://small:11434"
    assert s.classifier_confidence_threshold == 0.9
    assert s.max_message_chars == 100
    assert s.platform_prefixes == ("you are a direct and concise assistant", "eres un asistente")
    assert s.aws_region == "eu-west-1"


def test_the_llm_classifier_runs_only_when_ollama_host_is_set():
    assert Settings.from_env({}).ollama_host_explicit is False
    s = Settings.from_env({"OLLAMA_HOST": "http://gpu:11434"})
    assert s.ollama_host_explicit is True
    assert s.classifier_llm_model == s.ollama_model_name
    assert Settings.from_env({"OLLAMA_MODEL_NAME_CLASSIFIER": "qwen3:0.6b"}).classifier_llm_model == "qwen3:0.6b"


def test_the_shipped_classifier_is_the_default_and_none_switches_it_off():
    default = Settings.from_env({}).classifier_model_path
    assert default.endswith("/data/models/routing-classifier.json")
    assert Path(default).is_file()  # found from any working directory of the checkout
    assert Settings.from_env({"CLASSIFIER_MODEL_PATH": "none"}).classifier_model_path is None
    assert Settings.from_env({"CLASSIFIER_MODEL_PATH": "s3://b/m.json"}).classifier_model_path == "s3://b/m.json"


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
    assert s.emulator_keys == {}
    assert s.storage_options() == {"region": "us-east-1", "endpoint": "http://127.0.0.1:5000", "allow_http": "true"}
    assert s.session_backend == "dynamodb"  # the keys still say "this process talks to AWS"
    assert Settings.from_env({}).storage_options() == {}


def test_an_emulators_static_keys_stay_out_of_repr_and_reach_both_clients():
    s = Settings(
        index_uri="s3://b/i",
        aws_endpoint_url="http://127.0.0.1:5000",
        emulator_access_key_id="testing",
        emulator_secret_access_key="sekrit",
    )
    assert "sekrit" not in repr(s)
    assert s.storage_options()["aws_secret_access_key"] == "sekrit"
    assert s.emulator_keys["aws_access_key_id"] == "testing"
    assert s.with_(aws_endpoint_url=None).emulator_keys == {}  # static keys never go to real AWS


def test_every_setting_is_documented_in_the_readme():
    from dataclasses import fields
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    from assist.settings import DERIVED, NOT_FROM_ENV

    names = [f.name.upper() for f in fields(Settings) if f.name not in DERIVED + NOT_FROM_ENV]
    missing = [n for n in names if f"`{n}`" not in readme]
    assert missing == []


def test_think_takes_a_boolean_or_a_level_and_one_model_on_one_host_gets_one_window():
    s = Settings.from_env(
        {
            "OLLAMA_THINK": "High",
            "OLLAMA_NUM_CTX_CONVERSATIONAL": "4096",
            "OLLAMA_MODEL_NAME_CONVERSATIONAL": "qwen3:0.6b",
        }
    )
    assert (s.ollama_think, s.classifier_llm_think, s.rewrite_think) == ("high", "false", "false")
    assert s.num_ctx_for(s.ollama_host, "qwen3:1.7b") == 8192
    assert s.num_ctx_for(s.light_host, "qwen3:0.6b") == 4096
    same = Settings.from_env({"OLLAMA_NUM_CTX_CONVERSATIONAL": "4096"})  # light = main's model: main's window
    assert same.num_ctx_for(same.light_host, same.light_model) == 8192
    with pytest.raises(SettingsError, match="CLASSIFIER_LLM_THINK='maybe'"):
        Settings.from_env({"CLASSIFIER_LLM_THINK": "maybe"})
