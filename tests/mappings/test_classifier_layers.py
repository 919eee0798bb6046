"""The layers of the event classifier, each alone, then stacked (precedence)."""

import numpy as np
import pytest
from sklearn.svm import LinearSVC

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier import Classification, EventInfo, KeywordClassifier, normalize
from mappings.classifier_layers import LayeredClassifier, context_guess, default_classifier
from mappings.classifier_model import (
    LEGACY_CHAR_RANGE,
    SVM_C,
    ModelError,
    bundled_training_set,
    load,
    make_vectorizers,
    read_labelled,
    save,
    train,
)
from mappings.classifier_overrides import Correction, Overrides, title_pattern

TINY = [
    ("gym session", "EXERCISE"),
    ("morning run", "EXERCISE"),
    ("swim laps", "EXERCISE"),
    ("team meeting", "ADMIN_WORK"),
    ("client call", "ADMIN_WORK"),
    ("weekly sync meeting", "ADMIN_WORK"),
    ("write report", "DEEP_WORK"),
    ("deep work on report", "DEEP_WORK"),
    ("write the spec", "DEEP_WORK"),
]


@pytest.fixture(scope="module")
def bundled():
    return load()


class FakeLLM:
    def __init__(self, answer=None):
        self.answer, self.asked = answer, []

    def ask(self, event):
        self.asked.append(event.title)
        return self.answer


# --- layer 1: corrections -------------------------------------------------------------


def test_a_correction_covers_the_same_title_with_other_numbers_and_case():
    assert title_pattern("  Gym - 7am! ") == "gym - #am"
    over = Overrides([Correction(title_pattern("Gym - 7am"), "SLEEP")])
    hit = over.match("GYM - 8am")
    assert (hit.action, hit.confidence, hit.layer) == ("SLEEP", 1.0, "override")
    assert over.match("Gym block") is None


def test_a_wildcard_correction_and_the_latest_one_wins():
    over = Overrides([Correction("standup *", "ADMIN_WORK"), Correction("standup *", "SOCIALIZE")])
    assert over.match("Standup with design").action == "SOCIALIZE"
    assert over.match("Standup") is None  # the "*" needs the space before it


def test_a_correction_with_an_unknown_action_is_refused():
    with pytest.raises(ValueError, match="unknown action 'NAP'"):
        Overrides([Correction("x", "NAP")])


# --- layer 2: rules (keyword tokens) ---------------------------------------------------


def test_multiword_and_punctuated_keywords_match_on_word_boundaries():
    rules = KeywordClassifier()
    assert rules.match_title("Réunion d'équipe produit").action == "ADMIN_WORK"
    assert rules.match_title("1:1 w/ Sam").action == "SOCIALIZE"
    assert rules.match_title("Birthday party at Tom's").action == "SOCIALIZE"
    assert rules.match_title("Tom's birthday").action == NOT_AN_ACTION
    assert rules.match_title("Volleyball") is None  # "vol" (a flight in French) is a word
    assert rules.match_title("Q3 planning doc").rule == "planning doc"


# --- layer 3: the learned model ---------------------------------------------------------


def test_the_model_scores_like_scikit_learn_and_round_trips_without_pickle(tmp_path):
    model = train(TINY * 3)
    path = save(model, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as data:  # plain arrays only
        assert all(data[k].dtype != object for k in data.files)
    again = load(path)
    texts = [normalize(t) for t, _ in TINY * 3]
    vecs = make_vectorizers()
    from scipy import sparse

    ref = sparse.hstack([v.fit_transform(texts) for v in vecs], format="csr")
    mine = again.features(texts)
    assert abs(ref - mine).max() < 1e-6
    svc = LinearSVC(C=SVM_C, random_state=0).fit(ref, [label for _, label in TINY * 3])
    new = ["evening run", "sales meeting", "write a report"]
    assert [label for label, _ in again.predict(new)] == list(svc.predict(again.features(new)))
    assert [label for label, _ in again.predict(new)] == ["EXERCISE", "ADMIN_WORK", "DEEP_WORK"]


def test_a_model_file_from_before_round_7_is_scored_with_its_own_2_to_4_grams(tmp_path):
    # Such a file's meta does not name its n-gram range; reading it with today's 3-5 would
    # look up grams its vocabulary never had and quietly answer worse.
    import json

    model = train(TINY * 3, char_range=LEGACY_CHAR_RANGE, c=1.0)
    path = save(model, tmp_path / "old.npz")
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays["meta"]))
    del meta["char_range"], meta["C"]
    arrays["meta"] = np.array(json.dumps(meta))
    np.savez_compressed(tmp_path / "old.npz", **arrays)
    old = load(tmp_path / "old.npz")
    assert old.char_range == LEGACY_CHAR_RANGE
    texts = [normalize(t) for t, _ in TINY * 3]
    from scipy import sparse

    ref = sparse.hstack(
        [v.fit_transform(texts) for v in make_vectorizers(LEGACY_CHAR_RANGE)], format="csr"
    )
    assert abs(ref - old.features(texts)).max() < 1e-6
    assert old.predict(["evening run"])[0][0] == "EXERCISE"


def test_a_title_with_nothing_the_model_knows_is_unclassified():
    model = train(TINY * 3)
    assert model.predict(["ξξξ"]) == [(UNCLASSIFIED, 0.0)]


def test_a_damaged_or_foreign_model_file_is_one_clear_error(tmp_path):
    bad = tmp_path / "m.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(ModelError, match="cannot load classifier model"):
        load(bad)
    np.savez(tmp_path / "other.npz", meta=np.array('{"format": "x"}'))
    with pytest.raises(ModelError, match="not a rhythm-bridge/classifier-model@1"):
        load(tmp_path / "other.npz")


def test_the_bundled_model_knows_titles_no_rule_knows(bundled):
    clf = LayeredClassifier(rules=KeywordClassifier(), model=bundled)
    for title, action in [
        ("Squash with Ben", "EXERCISE"),
        ("Piano recital practice", "LEARN"),
        ("Watch Dune", "BINGE_WATCH"),
    ]:
        result = clf.classify(title)
        assert (result.action, result.layer) == (action, "model"), title
        assert 0.5 <= result.confidence <= 1


def test_the_bundled_model_is_the_one_the_training_command_makes(bundled, tmp_path):
    # Reproducible: training on the shipped set again gives the same coefficients.
    fresh = train(read_labelled(bundled_training_set()))
    assert fresh.meta["digest"] == bundled.meta["digest"]
    assert np.allclose(fresh.coef, bundled.coef, atol=1e-5)


# --- layer 5 and context ------------------------------------------------------------------


def test_the_event_shape_decides_only_when_the_title_does_not():
    assert context_guess(EventInfo("Zorblax", all_day=True)).action == NOT_AN_ACTION
    assert context_guess(EventInfo("Zorblax", attendee_count=6)).action == "ADMIN_WORK"
    assert context_guess(EventInfo("Zorblax", transparency="transparent")).action == NOT_AN_ACTION
    night = EventInfo("Zorblax", duration_min=480, start_hour=23)
    assert context_guess(night).action == "SLEEP"
    assert context_guess(EventInfo("Zorblax", attendee_count=1, duration_min=60)) is None


def test_nothing_known_is_unclassified_with_zero_confidence(bundled):
    clf = LayeredClassifier(rules=KeywordClassifier(), model=bundled)
    result = clf.classify("Zorblax")
    assert (result.action, result.confidence, result.layer) == (UNCLASSIFIED, 0.0, "none")


# --- precedence ---------------------------------------------------------------------------


def test_first_confident_layer_wins(bundled):
    llm = FakeLLM(Classification("LEARN", 0.9, "llm"))
    over = Overrides([Correction(title_pattern("Gym block"), "ME_TIME")])
    clf = LayeredClassifier(KeywordClassifier(), bundled, over, llm)
    # the person's correction beats the rules
    assert clf.classify("Gym block").layer == "override"
    # the event type beats the title rules
    assert clf.classify(EventInfo("Gym", event_type="outOfOffice")).layer == "event_type"
    # rules beat the model; the model beats the LLM, which is never asked
    assert clf.classify("Team standup").layer == "rules"
    assert clf.classify("Laps at the pool").layer == "model"
    assert llm.asked == []
    # the event's shape answers before the LLM, which is asked only what is left
    assert clf.classify(EventInfo("Zorblax", all_day=True)).layer == "context"
    assert llm.asked == []
    answer = clf.classify(EventInfo("Zorblax"))
    assert (answer.action, answer.layer) == ("LEARN", "llm") and llm.asked == ["Zorblax"]


def test_an_llm_without_an_answer_falls_through_to_context(bundled):
    clf = LayeredClassifier(KeywordClassifier(), bundled, llm=FakeLLM(None))
    assert clf.classify(EventInfo("Zorblax", all_day=True)).layer == "context"
    assert clf.classify("Zorblax").action == UNCLASSIFIED


def test_batch_keeps_input_order_and_matches_one_by_one():
    clf = default_classifier()
    titles = ["Team standup", "Laps at the pool", "Blorp 42", "Journaling", ""]
    assert clf.classify_many(titles) == [clf.classify(t) for t in titles]


def test_the_version_changes_with_a_correction(bundled):
    plain = LayeredClassifier(KeywordClassifier(), bundled)
    fixed = LayeredClassifier(KeywordClassifier(), bundled, Overrides([Correction("x", "LEARN")]))
    assert plain.version != fixed.version
    assert plain.version == LayeredClassifier(KeywordClassifier(), bundled).version


# --- the data sets --------------------------------------------------------------------------


def test_the_evaluation_set_is_big_varied_and_separate_from_training():
    from tests.conftest import ROOT

    train_set = read_labelled(bundled_training_set())
    eval_set = read_labelled(ROOT / "benchmarks" / "data" / "classifier_eval.tsv")
    assert len(eval_set) >= 300
    per_label = {}
    for _, label in eval_set:
        per_label[label] = per_label.get(label, 0) + 1
    assert set(per_label) == {*ACTIONS, NOT_AN_ACTION}
    assert min(per_label.values()) >= 15
    shared = {normalize(t) for t, _ in train_set} & {normalize(t) for t, _ in eval_set}
    assert shared == set()
    accented = [t for t, _ in eval_set if normalize(t) != t.casefold()]
    assert len(accented) >= 30  # German, Spanish, French (and some Italian) titles


def test_a_calendar_named_for_what_it_holds_labels_its_unknown_entries():
    from mappings.classifier import calendar_name

    assert calendar_name("/home/ana/calendars/Kurse.ics") == "Kurse"
    assert calendar_name("C:\\cal\\Uni_Vorlesungen.ics") == "Uni Vorlesungen"
    assert calendar_name("x1y2@group.calendar.google.com") == ""
    clf = default_classifier()
    found = clf.classify(EventInfo("Xq-77 Müller", calendar_name="Kurse"))
    assert (found.action, found.layer) == ("LEARN", "context")
    assert clf.classify(EventInfo("Xq-77", calendar_name="Gym")).action == "EXERCISE"
    # The title still comes first, and a calendar named for markers labels nothing.
    assert clf.classify(EventInfo("Team standup", calendar_name="Kurse")).action == "ADMIN_WORK"
    assert clf.classify(EventInfo("Xq-77", calendar_name="Holidays")).action == "UNCLASSIFIED"


def test_a_location_labels_an_otherwise_unknown_title() -> None:
    from mappings.classifier_layers import default_classifier

    clf = default_classifier()
    unknown = "Xq7 Blorp"
    assert clf.classify(EventInfo(title=unknown)).action == UNCLASSIFIED
    for place, action in [
        ("Przychodnia Rejonowa nr 3", "ADMIN_WORK"),
        ("Hörsaal 2, Gebäude B", "LEARN"),
        ("Aquapark Wrocław", "EXERCISE"),
        ("McFit Gym Kreuzberg", "EXERCISE"),
    ]:
        got = clf.classify(EventInfo(title=unknown, location=place))
        assert (got.action, got.layer) == (action, "context"), place
    # A street address says nothing about what is done there.
    assert clf.classify(EventInfo(title=unknown, location="ul. Długa 5")).action == UNCLASSIFIED
    # The title still comes first.
    assert clf.classify(EventInfo(title="Yoga", location="Przychodnia")).action == "EXERCISE"


def test_an_event_the_person_organizes_with_others_is_a_meeting() -> None:
    from mappings.classifier_layers import default_classifier

    clf = default_classifier()
    mine = clf.classify(EventInfo(title="Xq7 Blorp", organized_by_me=True, attendee_count=2))
    assert (mine.action, mine.layer) == ("ADMIN_WORK", "context")
    # Organizing alone (no one else invited) is not a meeting.
    alone = clf.classify(EventInfo(title="Xq7 Blorp", organized_by_me=True, attendee_count=0))
    assert alone.action == UNCLASSIFIED


def test_the_bundled_model_stays_float32_in_memory_and_scores_as_a_float64_copy() -> None:
    # The daemon keeps this model for its lifetime: float32 halves its largest array, and
    # widening only the columns a title hits keeps every probability the same to the bit.
    import dataclasses

    model = load()
    assert model.coef.dtype == np.float32
    wide = dataclasses.replace(model, coef=model.coef.astype(np.float64))
    titles = ["Team stand-up", "Basen", "Trening 18:00", "C1 9h-12h30 Amphi", "会議", "xyz"]
    assert np.array_equal(model.predict_proba(titles)[0], wide.predict_proba(titles)[0])


def test_a_batch_is_scored_as_each_title_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    # Many titles are scored in whole-array operations, a few row by row: the same
    # probabilities either way, unknown and repeated-gram titles included.
    import mappings.classifier_model as classifier_model

    model = load()
    titles = ["Team stand-up", "Basen", "Trening 18:00", "C1 9h-12h30 Amphi", "会議", "xyz", ""]
    titles += ["Lala lala lala", "Mamma mia", "qqqq", "Standup standup"] * 8
    assert len(titles) >= classifier_model.BATCH_ROWS
    batch, known = model.predict_proba(titles)
    monkeypatch.setattr(classifier_model, "BATCH_ROWS", len(titles) + 1)
    alone, known_alone = model.predict_proba(titles)
    assert np.abs(batch - alone).max() < 1e-12
    assert known.tolist() == known_alone.tolist()
    assert not known[titles.index("")] and known[0]
