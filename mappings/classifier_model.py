"""The learned layer: TF-IDF character and word n-grams + a linear model, stored without pickle.

Training uses scikit-learn; the result is exported as one compressed NPZ of plain arrays
(vocabularies, idf weights, coefficients, labels) loaded with `allow_pickle=False`, and
scored here with numpy alone, so loading is fast and loading a file cannot run code. SciPy
(about 25 MB resident) and scikit-learn (about 115 MB) are imported only to train, or
for `features()`, the sparse matrix a test compares with scikit-learn's.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.resources import files
from itertools import pairwise
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from mappings.actions import UNCLASSIFIED
from mappings.classifier import LABELS, normalize

if TYPE_CHECKING:
    from scipy import sparse

FORMAT = "rhythm-bridge/classifier-model@1"
BUNDLED = "classifier_model.npz"
# One analyzer per block: (name, sklearn analyzer, n-gram range).
# Character n-grams of 3-5 within words and C = 0.5 won leave-one-source-out on the
# real-calendar development set in round 7 of issue 21 (benchmarks/classifier_loso.py:
# 487 of 595 right against 483 for the 2-4 grams and C = 1 used before): longer grams see
# the parts of compounds ("voetbal|training", "teamover|leg") and C = 0.5 fits less to
# single titles.
BLOCKS: tuple[tuple[str, str, tuple[int, int]], ...] = (
    ("char", "char_wb", (3, 5)),
    ("word", "word", (1, 2)),
)
TOKEN_PATTERN = r"(?u)\b\w+\b"  # single letters and digits count ("1:1", "Q3")


class ModelError(ValueError):
    """The model file is missing, damaged or of another format; the message says which."""


_TOKEN = re.compile(TOKEN_PATTERN)
CHAR_RANGE = BLOCKS[0][2]
# Model files written before round 7 say nothing of their n-grams: they were 2-4.
LEGACY_CHAR_RANGE = (2, 4)
SVM_C = 0.5
# From this many titles on, predict_proba scores the batch in whole-array operations; a
# few titles are cheaper row by row (the daemon's single new event).
BATCH_ROWS = 32


def _char_grams(word: str, lo: int, hi: int) -> list[str]:
    """The `char_wb` n-grams of one word, exactly as scikit-learn makes them."""
    padded = f" {word} "
    out: list[str] = []
    for n in range(lo, hi + 1):
        if n > len(padded):
            break
        out.extend(padded[i : i + n] for i in range(len(padded) - n + 1))
    return out


def _tfidf_block(indptr: list[int], cols: list[int], n: int, idf: np.ndarray) -> sparse.csr_matrix:
    """Rows of n-gram columns -> sublinear tf times idf, l2-normalized per row."""
    from scipy import sparse

    ones = np.ones(len(cols), dtype=np.float64)
    block = sparse.csr_matrix((ones, cols, indptr), shape=(len(indptr) - 1, n))
    block.sum_duplicates()
    block.data = (1.0 + np.log(block.data)) * idf[block.indices]
    norms = np.sqrt(np.asarray(block.multiply(block).sum(axis=1)).ravel())
    norms[norms == 0] = 1.0
    return sparse.diags(1.0 / norms) @ block


@dataclass(frozen=True)
class LearnedModel:
    labels: tuple[str, ...]
    vocab: tuple[dict[str, int], ...]  # per block: n-gram -> column
    idf: tuple[np.ndarray, ...]
    coef: np.ndarray  # (labels, all columns)
    intercept: np.ndarray
    meta: dict[str, Any]
    _char_cache: dict[str, list[int]] = field(default_factory=dict, compare=False, repr=False)

    @property
    def version(self) -> str:
        return str(self.meta.get("digest", ""))

    @property
    def char_range(self) -> tuple[int, int]:
        """The char n-gram lengths it was trained with (files before round 7: 2-4)."""
        lo, hi = self.meta.get("char_range", LEGACY_CHAR_RANGE)
        return int(lo), int(hi)

    def _columns(self, texts: Sequence[str]) -> tuple[list[int], list[int], list[int], list[int]]:
        """Per text, the char and word n-gram columns it hits (CSR pointers and columns)."""
        char_vocab, word_vocab = self.vocab
        cache = self._char_cache
        if len(cache) > 200_000:  # a long-running daemon sees an open-ended set of words
            cache.clear()
        lo, hi = self.char_range
        char_ptr, word_ptr = [0], [0]
        char_cols: list[int] = []
        word_cols: list[int] = []
        for text in texts:
            for w in text.split():
                hit = cache.get(w)
                if hit is None:
                    grams = _char_grams(w, lo, hi)
                    hit = cache[w] = [i for g in grams if (i := char_vocab.get(g)) is not None]
                char_cols.extend(hit)
            char_ptr.append(len(char_cols))
            toks = _TOKEN.findall(text)
            word_cols.extend(i for t in toks if (i := word_vocab.get(t)) is not None)
            word_cols.extend(
                i for a, b in pairwise(toks) if (i := word_vocab.get(f"{a} {b}")) is not None
            )
            word_ptr.append(len(word_cols))
        return char_ptr, char_cols, word_ptr, word_cols

    def features(self, texts: Sequence[str]) -> sparse.csr_matrix:
        """TF-IDF rows (sublinear tf, l2 per block) for already-normalized texts."""
        from scipy import sparse

        char_vocab, word_vocab = self.vocab
        char_ptr, char_cols, word_ptr, word_cols = self._columns(texts)
        return sparse.hstack(
            [
                _tfidf_block(char_ptr, char_cols, len(char_vocab), self.idf[0]),
                _tfidf_block(word_ptr, word_cols, len(word_vocab), self.idf[1]),
            ],
            format="csr",
        )

    def predict_proba(self, titles: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Class probabilities (rows in `labels` order), and which rows had any known n-gram.

        The same TF-IDF rows as `features()`, scored row by row with numpy: a title hits a
        few dozen columns, so the coefficient columns it needs are gathered directly.
        """
        char_ptr, char_cols, word_ptr, word_cols = self._columns([normalize(t) for t in titles])
        offset = len(self.vocab[0])
        scores = np.tile(self.intercept, (len(titles), 1)).astype(np.float64)
        known = np.zeros(len(titles), dtype=bool)
        if len(titles) >= BATCH_ROWS:
            self._score_block(scores, known, char_ptr, char_cols, 0)
            self._score_block(scores, known, word_ptr, word_cols, 1)
            return softmax(scores, float(self.meta.get("temperature", 1.0))), known
        for row in range(len(titles)):
            for cols, ptr, idf, shift in (
                (char_cols, char_ptr, self.idf[0], 0),
                (word_cols, word_ptr, self.idf[1], offset),
            ):
                hits = cols[ptr[row] : ptr[row + 1]]
                if not hits:
                    continue
                known[row] = True
                unique, counts = np.unique(np.asarray(hits), return_counts=True)
                weights = (1.0 + np.log(counts)) * idf[unique]
                norm = np.sqrt(weights @ weights)
                if norm:
                    weights /= norm
                scores[row] += self.coef[:, unique + shift].astype(np.float64) @ weights
        return softmax(scores, float(self.meta.get("temperature", 1.0))), known

    def _score_block(
        self, scores: np.ndarray, known: np.ndarray, ptr: list[int], cols: list[int], block: int
    ) -> None:
        """Add one block's TF-IDF rows times the coefficients to `scores`, for a whole batch
        at once: the row-by-row loop pays numpy's call overhead per title, which a batch of
        thousands of titles the rules leave open feels (the daemon's first pass, a year of
        calendar)."""
        if not cols:
            return
        idf, shift = self.idf[block], sum(len(v) for v in self.vocab[:block])
        lengths = np.diff(np.asarray(ptr))
        rows = np.repeat(np.arange(len(lengths)), lengths)
        width = len(idf)
        # One key per (row, column): unique sorts by row, then column, and counts repeats.
        keys, counts = np.unique(rows * width + np.asarray(cols), return_counts=True)
        row, col = np.divmod(keys, width)
        weights = (1.0 + np.log(counts)) * idf[col]
        norms = np.sqrt(np.bincount(row, weights * weights, minlength=len(lengths)))
        norms[norms == 0] = 1.0
        weights /= norms[row]
        contrib = self.coef[:, col + shift].astype(np.float64) * weights
        for j in range(scores.shape[1]):
            scores[:, j] += np.bincount(row, contrib[j], minlength=len(lengths))
        known |= lengths > 0

    def predict(self, titles: Sequence[str]) -> list[tuple[str, float]]:
        """Best label and its probability per title; UNCLASSIFIED, 0 when nothing is known."""
        if not titles:
            return []
        proba, known = self.predict_proba(titles)
        best = proba.argmax(axis=1)
        return [
            (self.labels[j], float(proba[i, j])) if known[i] else (UNCLASSIFIED, 0.0)
            for i, j in enumerate(best)
        ]


def softmax(scores: np.ndarray, temperature: float) -> np.ndarray:
    """Row-wise softmax of decision scores scaled by a fitted temperature."""
    scaled = scores * temperature
    scaled -= scaled.max(axis=1, keepdims=True)
    exp = np.exp(scaled)
    return exp / exp.sum(axis=1, keepdims=True)


def _fit_temperature(clf: Any, matrix: sparse.csr_matrix, labels: list[str]) -> float:
    """The scale that turns held-out decision scores into the best-calibrated probabilities."""
    from sklearn.base import clone
    from sklearn.model_selection import KFold, cross_val_predict

    if len(labels) < 20:
        return 1.0
    folds = KFold(5, shuffle=True, random_state=0)
    scores = cross_val_predict(clone(clf), matrix, labels, cv=folds, method="decision_function")
    truth = np.searchsorted(np.asarray(sorted(set(labels))), labels)
    best, best_loss = 1.0, float("inf")
    for t in np.arange(0.5, 15.01, 0.25):
        proba = softmax(scores, float(t))
        loss = -float(np.mean(np.log(proba[np.arange(len(labels)), truth] + 1e-12)))
        if loss < best_loss:
            best, best_loss = float(t), loss
    return best


def read_labelled(path: Path | str) -> list[tuple[str, str]]:
    """(title, label) pairs from a `title<TAB>label` file; `#` lines are comments."""
    path = Path(path)
    pairs = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        title, sep, label = line.rpartition("\t")
        if not sep or label.strip() not in LABELS:
            raise ModelError(f"{path}:{n}: expected 'title<TAB>label', got {line!r}")
        pairs.append((title.strip(), label.strip()))
    return pairs


def bundled_training_set() -> Path:
    return Path(str(files("mappings").joinpath("classifier_data", "train.tsv")))


def make_vectorizers(char_range: tuple[int, int] = CHAR_RANGE) -> list[Any]:
    """The scikit-learn vectorizers whose fitted state `LearnedModel.features` reproduces."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    return [
        TfidfVectorizer(
            analyzer=kind,
            ngram_range=char_range if kind == "char_wb" else rng,
            lowercase=False,
            token_pattern=TOKEN_PATTERN if kind == "word" else None,
            sublinear_tf=True,
        )
        for _, kind, rng in BLOCKS
    ]


def train(
    pairs: Iterable[tuple[str, str]],
    *,
    extra_weight: Iterable[tuple[str, str]] = (),
    char_range: tuple[int, int] = CHAR_RANGE,
    c: float = SVM_C,
) -> LearnedModel:
    """Fit the model on labelled titles; `extra_weight` pairs (corrections) count thrice.

    `char_range` and `c` are there for the leave-one-source-out benchmark
    (benchmarks/classifier_loso.py), which chose the defaults.
    """
    from scipy import sparse
    from sklearn.svm import LinearSVC

    base = list(pairs)
    heavy = list(extra_weight)
    rows = base + heavy * 3
    if len({label for _, label in rows}) < 2:
        raise ModelError("training needs titles of at least two labels")
    texts = [normalize(t) for t, _ in rows]
    labels = [label for _, label in rows]
    vectorizers = make_vectorizers(char_range)
    matrix = sparse.hstack([v.fit_transform(texts) for v in vectorizers], format="csr")
    clf = LinearSVC(C=c, random_state=0)
    temperature = _fit_temperature(clf, matrix, labels)
    clf.fit(matrix, labels)
    vocab = tuple(
        {str(k): int(i) for k, i in sorted(v.vocabulary_.items(), key=lambda kv: kv[1])}
        for v in vectorizers
    )
    # The settings are part of the fingerprint: the same titles with other n-grams score
    # differently, and the version must change whenever an answer could.
    settings = [list(char_range), c]
    digest = hashlib.sha256(
        json.dumps([*sorted(base), *sorted(heavy), settings], ensure_ascii=False).encode()
    ).hexdigest()[:16]
    meta = {
        "format": FORMAT,
        "digest": digest,
        "examples": len(base),
        "corrections": len(heavy),
        "corrections_digest": corrections_digest(heavy),
        "temperature": temperature,
        "char_range": list(char_range),
        "C": c,
    }
    return LearnedModel(
        labels=tuple(str(c) for c in clf.classes_),
        vocab=vocab,
        idf=tuple(np.asarray(v.idf_, dtype=np.float64) for v in vectorizers),
        coef=np.asarray(clf.coef_, dtype=np.float64),
        intercept=np.asarray(clf.intercept_, dtype=np.float64),
        meta=meta,
    )


def corrections_digest(corrections: Iterable[tuple[str, str]]) -> str:
    """A short fingerprint of a set of corrections, to know when a retrain is due."""
    data = json.dumps(sorted(corrections), ensure_ascii=False).encode()
    return hashlib.sha256(data).hexdigest()[:16]


def save(model: LearnedModel, path: Path) -> Path:
    """Write the model as a compressed NPZ of plain arrays (atomically)."""
    arrays: dict[str, np.ndarray] = {
        "meta": np.array(json.dumps(model.meta, sort_keys=True)),
        "labels": np.array(model.labels),
        "coef": model.coef.astype(np.float32),
        "intercept": model.intercept,
    }
    for (name, _, _), vocab, idf in zip(BLOCKS, model.vocab, model.idf, strict=True):
        arrays[f"vocab_{name}"] = np.array(list(vocab), dtype=str)
        arrays[f"idf_{name}"] = idf.astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("wb") as fh:
        np.savez_compressed(fh, **arrays)  # type: ignore[arg-type]
    tmp.replace(path)
    return path


def load(path: Path | None = None) -> LearnedModel:
    """Load a model saved by `save` (default: the bundled one); never unpickles."""
    source = path or Path(str(files("mappings").joinpath(BUNDLED)))
    return _load_cached(str(source), _mtime(source))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


@lru_cache(maxsize=4)
def _load_cached(source: str, _mtime: float) -> LearnedModel:
    try:
        with np.load(source, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
            if meta.get("format") != FORMAT:
                raise ModelError(f"{source}: not a {FORMAT} file; retrain with train-classifier")
            vocab = tuple(
                {str(g): i for i, g in enumerate(data[f"vocab_{name}"].tolist())}
                for name, _, _ in BLOCKS
            )
            return LearnedModel(
                labels=tuple(str(x) for x in data["labels"].tolist()),
                vocab=vocab,
                idf=tuple(data[f"idf_{name}"].astype(np.float64) for name, _, _ in BLOCKS),
                # Kept as stored (float32): half the daemon's largest array. The scores
                # are the same to the bit: predict_proba widens the few columns a title
                # hits to float64 before the product, as a float64 copy held them.
                coef=data["coef"],
                intercept=data["intercept"].astype(np.float64),
                meta=meta,
            )
    except (OSError, KeyError, ValueError) as err:
        if isinstance(err, ModelError):
            raise
        raise ModelError(f"{source}: cannot load classifier model: {err}") from None
