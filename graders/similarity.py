"""Reference-similarity assertions of oh-my-knowledge, with its semantics: ``rouge_n_min``,
``bleu_min`` and ``levenshtein_max``.

Tokens are as oh-my-knowledge cuts them: the lower-cased text's runs of ASCII letters and digits,
and each CJK ideograph (U+4E00..U+9FA5) on its own. ROUGE-N is recall with clipped counts; BLEU is
the unsmoothed single-reference form (geometric mean of 1..4-gram precisions times the brevity
penalty, 0 when any precision is 0). The reference is ``reference``, else ``value``.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from graders.schema import DistanceAssertion, Observation, Outcome, OverlapAssertion

_TOKEN = re.compile(r"[a-z0-9]+|[\u4e00-\u9fa5]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def ngrams(tokens: list[str], n: int) -> list[str]:
    if n <= 0 or len(tokens) < n:
        return []
    return [" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def clipped_overlap(candidate: list[str], reference: list[str]) -> int:
    if not candidate or not reference:
        return 0
    ref = Counter(reference)
    return sum(min(count, ref[gram]) for gram, count in Counter(candidate).items())


def rouge_n(candidate: str, reference: str, n: int) -> float:
    """N-gram recall against the reference; a repeated n-gram counts at most as often as there."""
    ref = ngrams(tokenize(reference), n)
    if not ref:
        return 0.0
    return clipped_overlap(ngrams(tokenize(candidate), n), ref) / len(ref)


def bleu(candidate: str, reference: str, max_n: int = 4) -> float:
    cand_tokens, ref_tokens = tokenize(candidate), tokenize(reference)
    if not cand_tokens or not ref_tokens:
        return 0.0
    log_sum = 0.0
    for n in range(1, max_n + 1):
        cand = ngrams(cand_tokens, n)
        if not cand:
            return 0.0
        overlap = clipped_overlap(cand, ngrams(ref_tokens, n))
        if overlap == 0:
            return 0.0
        log_sum += math.log(overlap / len(cand))
    brevity = 1.0 if len(cand_tokens) >= len(ref_tokens) else math.exp(1 - len(ref_tokens) / len(cand_tokens))
    return brevity * math.exp(log_sum / max_n)


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute: 1 each), one numpy row at a time: a row's
    insertions are a running minimum, so two long outputs cost milliseconds, not minutes."""
    import numpy as np  # here: the sample path reaches its first call without numpy

    if a == b:
        return 0
    if len(a) < len(b):
        a, b = b, a
    if not b:
        return len(a)
    codes_b = np.array([ord(c) for c in b], dtype=np.int64)
    steps = np.arange(len(b) + 1, dtype=np.int64)
    prev = steps.copy()
    for i, char in enumerate(a, start=1):
        best = np.empty_like(prev)
        best[0] = i
        # deletion (prev[j] + 1) or substitution / match (prev[j-1] + cost)
        best[1:] = np.minimum(prev[1:] + 1, prev[:-1] + (codes_b != ord(char)))
        # insertion: curr[j] = min over k <= j of best[k] + (j - k)
        prev = np.minimum.accumulate(best - steps) + steps
    return int(prev[-1])


def _threshold(a: OverlapAssertion) -> float:
    return 0.5 if a.threshold is None else a.threshold


def rouge_n_min(a: OverlapAssertion, obs: Observation) -> Outcome:
    n = a.n or 1
    score = rouge_n(obs.output, a.reference, n)
    return score >= _threshold(a), f"ROUGE-{n} {score:.3f} (min {_threshold(a):g})"


def bleu_min(a: OverlapAssertion, obs: Observation) -> Outcome:
    score = bleu(obs.output, a.reference)
    return score >= _threshold(a), f"BLEU {score:.3f} (min {_threshold(a):g})"


def levenshtein_max(a: DistanceAssertion, obs: Observation) -> Outcome:
    distance = levenshtein(obs.output, a.reference)
    limit = float(a.value)
    return distance <= limit, f"edit distance {distance} (max {limit:g})"
