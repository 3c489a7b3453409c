"""`assist bench cost`'s arithmetic (ADR 0068): the Lambda GB-seconds of each type's functions at the template's
memory sizes, the Ask function waiting for the whole execution, arm64 at its own price, the model host apart."""

from __future__ import annotations

import pytest

from assist_dev.bench.cost import MODEL_S, PRICES, cost, memory_sizes

MEMORY = {"ClassifyFunction": 1024, "RetrieveFunction": 2048, "AnswerFunction": 1024, "AskFunction": 512}


def test_memory_sizes_come_from_the_template():
    sizes = memory_sizes()
    assert {k: sizes[k] for k in MEMORY} == MEMORY  # the values template.yaml sets today


def test_a_searching_question_pays_for_four_functions_and_a_light_one_for_three():
    ms = {"classify": 10.0, "retrieve": 100.0, "answer": 20.0}
    out = cost({"RETRIEVAL": ms, "PLATFORM": ms}, MEMORY, model_s={"main": 2.0, "light": 1.0})
    # RETRIEVAL: classify 10 ms @1 GB, retrieve 100 ms @2 GB, answer 2,020 ms @1 GB, ask 2,130 ms @0.5 GB
    assert out["RETRIEVAL"]["billed_gb_s"] == pytest.approx(0.010 + 0.2 + 2.02 + 1.065, abs=1e-4)
    # PLATFORM never runs Retrieve (the state machine's RouteByType): answer 1,020 ms, ask 1,030 ms
    assert out["PLATFORM"]["billed_gb_s"] == pytest.approx(0.010 + 1.02 + 0.515, abs=1e-4)
    r = out["RETRIEVAL"]
    assert r["lambda_x86"] == pytest.approx(1000 * r["billed_gb_s"] * PRICES["lambda_gb_s_x86"], abs=1e-4)
    assert r["serverless_arm64"] < r["serverless_x86"]
    assert r["serverless_x86"] == pytest.approx(r["lambda_x86"] + r["other_services"], abs=2e-4)
    assert r["model_host"] == pytest.approx(1000 * 2.0 / 3600 * PRICES["model_host_hour"] / 4, abs=1e-4)


def test_prices_and_model_time_are_parameters():
    ms = {"RETRIEVAL": {"classify": 1.0, "retrieve": 1.0, "answer": 1.0}}
    base = cost(ms, MEMORY)["RETRIEVAL"]
    dearer = cost(ms, MEMORY, PRICES | {"lambda_gb_s_x86": 2 * PRICES["lambda_gb_s_x86"]})["RETRIEVAL"]
    assert dearer["lambda_x86"] == pytest.approx(2 * base["lambda_x86"], abs=1e-4)
    slower = cost(ms, MEMORY, model_s=MODEL_S | {"main": 2 * MODEL_S["main"]})["RETRIEVAL"]
    assert slower["model_host"] == pytest.approx(2 * base["model_host"], abs=1e-4)
