import pytest

from mappings.classifier import EventInfo, KeywordClassifier, RulesError, load_rules, normalize


@pytest.fixture(scope="module")
def clf():
    return KeywordClassifier()


# The seed's own examples, then other languages and not-an-action cases.
@pytest.mark.parametrize(
    ("title", "action"),
    [
        ("Q3 planning doc", "DEEP_WORK"),
        ("Team standup", "ADMIN_WORK"),
        ("Learn Python course", "LEARN"),
        ("Gym block", "EXERCISE"),
        ("Gym - 7am", "EXERCISE"),
        ("Journaling", "MEDITATE"),
        ("Dinner with family", "FAMILY_TIME"),
        ("Team social event", "SOCIALIZE"),
        ("1:1 with Sarah", "SOCIALIZE"),
        ("Date night", "FAMILY_TIME"),
        ("No meeting block", "ME_TIME"),
        ("Sleep / recovery day", "SLEEP"),
        ("Expense report", "ADMIN_WORK"),
        ("Netflix", "BINGE_WATCH"),
        ("Laufen im Park", "EXERCISE"),
        ("Cena familiar", "FAMILY_TIME"),
        ("Méditation du matin", "MEDITATE"),
        ("Besprechung mit Vertrieb", "ADMIN_WORK"),
        ("Out of office", "NOT_AN_ACTION"),
        ("Flight to Lisbon", "NOT_AN_ACTION"),
        ("Anna's birthday", "NOT_AN_ACTION"),
    ],
)
def test_titles(clf, title, action):
    result = clf.classify(title)
    assert result.action == action, result
    assert result.layer == "rules" and 0 < result.confidence <= 1


def test_words_match_on_boundaries_only(clf):
    # "run" must not fire inside "brunch" (which is social), nor "tv" inside "ctv".
    assert clf.classify("Brunch").action == "SOCIALIZE"
    assert clf.classify("CTVA review").action == "ADMIN_WORK"


def test_event_type_beats_the_title(clf):
    assert clf.classify(EventInfo("Team standup", event_type="focusTime")).action == "DEEP_WORK"
    ooo = clf.classify(EventInfo("Gym", event_type="outOfOffice"))
    assert ooo.action == "NOT_AN_ACTION" and ooo.layer == "event_type"


def test_unknown_is_unclassified_not_a_guess(clf):
    result = clf.classify("Zorblax")
    assert (result.action, result.confidence, result.layer) == ("UNCLASSIFIED", 0.0, "none")
    assert clf.classify(EventInfo("Zorblax", all_day=True)).action == "NOT_AN_ACTION"


def test_normalize_folds_case_accents_and_space():
    assert normalize("  Réunion   d'ÉQUIPE ") == "reunion d'equipe"


def test_a_custom_rules_file(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('version = "x"\n[[rule]]\naction = "LEARN"\nkeywords = ["zorblax"]\n')
    assert KeywordClassifier(path).classify("Zorblax session").action == "LEARN"


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('[[rule]]\naction = "NAP"\nkeywords = ["x"]\n', "unknown action 'NAP'"),
        ('[[rule]]\naction = "LEARN"\npatterns = ["("]\n', "bad pattern"),
        ("[[rule]\n", "cannot read rules"),
    ],
)
def test_bad_rules_files_say_which_rule(tmp_path, text, needle):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(RulesError, match=needle):
        load_rules(path)
