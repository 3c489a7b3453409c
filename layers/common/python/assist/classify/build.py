"""The routing cascade as deployed, assembled from the settings: the embedding layer when a classifier model is
configured (one artifact, or a registry's `current` followed as it moves), the LLM layer when OLLAMA_HOST is set.
Each layer is built on its first use, once."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from assist.aws.clients import client
from assist.classify.cascade import Cascade
from assist.classify.llm import LLMClassifier
from assist.embed.build import lazy_embedder
from assist.lazy import Lazy, once

if TYPE_CHECKING:
    from assist.classify.embedding import EmbeddingLayer
    from assist.embed.base import Embedder
    from assist.settings import Settings


def build_cascade(settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None) -> Cascade:
    """The cascade as deployed: embedding layer when a model is configured, LLM layer when OLLAMA_HOST is set."""
    return Cascade(settings, embedding=embedding_layer(settings, embedder, s3), llm=llm_layer(settings))


def embedding_layer(
    settings: Settings, embedder: Callable[[], Embedder] | None = None, s3: Any = None
) -> Callable[[], EmbeddingLayer] | None:
    """The embedding layer's provider, or None when CLASSIFIER_MODEL_PATH is off. A path `<registry>/current`
    follows the registry's pointer (`assist.classify.reload`); any other path is one artifact, loaded once."""
    path = settings.classifier.model_path
    if not path:
        return None
    embedder = embedder or lazy_embedder(settings)
    if s3 is None and path.startswith("s3://"):
        s3 = Lazy(lambda: client("s3", settings))  # boto3 is imported by the first read, not here
    if root := settings.classifier.registry:
        # deferred, ADR 0104: numpy, 0.04 s, which the answer function (it builds the cascade's providers) never uses
        from assist.classify.registry import Registry
        from assist.classify.reload import ReloadingLayer

        return ReloadingLayer(Registry(root, s3), embedder, settings.classifier.reload_s)

    def load() -> EmbeddingLayer:
        # deferred, ADR 0104: numpy, as above
        from assist.classify.embedding import EmbeddingLayer

        return EmbeddingLayer.load(path, embedder(), s3=s3)

    return once(load)


def llm_layer(settings: Settings) -> Callable[[], LLMClassifier] | None:
    """The LLM layer's provider, or None when OLLAMA_HOST was not set."""
    if not settings.ollama.host_explicit:
        return None

    return once(lambda: LLMClassifier.from_settings(settings))
