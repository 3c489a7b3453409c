"""Which language a question is written in: enough to tell a Spanish question over English docs.

The local embedder (all-MiniLM-L6-v2) is English-only and BM25 matches words, so a question in
another language than the index misses whatever the two cannot bridge. When an LLM is configured,
such a question gets a translated query for the full-text side (`query/translate.py`); this module
only says when. Counting each language's most common function words is crude, but a search query
of five words has few other signals, and a wrong "unknown" costs nothing (no translation).
"""

from __future__ import annotations

import re
import unicodedata

_STOPWORDS = {
    "en": "the of and to in is are what how does do for with on an it that this which can why when where be by",
    "es": "el la los las de del que qué en y es son un una por para con cómo como cuál cuál cuándo dónde se "
    "lo al hay puedo hace está están sobre mi tu sus qué",
    "pt": "o os as de do da que em e é são um uma por para com como qual quando onde não se ao na no",
    "fr": "le la les des du de que qui est sont un une pour avec comment quel quelle où dans et ne pas tu",
    "de": "der die das des den dem und ist sind ein eine wie was wo für mit nicht zu im auf",
    "it": "il lo la gli le di del che è sono un una per con come quale dove non nel della tu",
}
_WORDS = {lang: set(words.split()) for lang, words in _STOPWORDS.items()}
_TOKEN = re.compile(r"[^\W\d_]+", re.UNICODE)
#: the language a question needs two more function words of than of any other
MARGIN = 2
#: letters that, of the tables' languages, only Spanish and Portuguese write (ADR 0128), and Portuguese's own
_IBERIAN, _PORTUGUESE = set("ñáíóú"), set("ãõçâêô")
NAMES = {"en": "English", "es": "Spanish", "pt": "Portuguese", "fr": "French", "de": "German", "it": "Italian"}


def detect(text: str, margin: int = MARGIN) -> str | None:
    """An ISO 639-1 code, or None when the text does not say clearly (`margin` function words ahead)."""
    tokens = [t.lower() for t in _TOKEN.findall(text)]
    counts = sorted(((sum(t in ws for t in tokens), lang) for lang, ws in _WORDS.items()), reverse=True)
    (best, lang), (second, _) = counts[0], counts[1]
    if text.lstrip().startswith("¿"):
        return "es"
    if best >= margin and best - second >= margin - 1 and best > second:
        return lang
    # too few function words ("Repite tu última respuesta."): a letter no English question writes still tells
    letters = set(text.lower())
    return "es" if letters & _IBERIAN and not letters & _PORTUGUESE else None


def foreign(text: str, index_language: str) -> str | None:
    """The question's language when it is clearly another than the index's."""
    lang = detect(text)
    return lang if lang is not None and lang != index_language else None


def fold(text: str) -> str:
    """Lower case without accents: 'Cuántos principios' → 'cuantos principios'."""
    return "".join(c for c in unicodedata.normalize("NFKD", text.lower()) if not unicodedata.combining(c))
