"""Calendar event -> action type: the shared types and the keyword-rules layer.

The rules layer looks at the event's own type (Google `eventType`), then at keyword rules
from an editable TOML file. `mappings.classifier_layers` stacks it with the person's
corrections, the bundled learned model and an optional LLM. What nothing recognises is
UNCLASSIFIED, never a guess dressed as an answer.
"""

from __future__ import annotations

import re
import tomllib
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from importlib.resources import files
from pathlib import Path

from mappings.actions import ACTIONS, NOT_AN_ACTION, UNCLASSIFIED
from mappings.classifier_gate import PatternGate

LABELS = frozenset({*ACTIONS, NOT_AN_ACTION})


@dataclass(frozen=True, slots=True)
class EventInfo:
    """What the classifier may look at; everything but the title is optional."""

    title: str
    event_type: str = "default"
    all_day: bool = False
    attendee_count: int = 0
    duration_min: float | None = None
    transparency: str = "opaque"
    start_hour: int | None = None  # local hour the event starts, 0-23
    weekday: int | None = None  # local day it starts, 0 = Monday (for the LLM's reading)
    recurring: bool = False  # an instance of a repeating series
    calendar_kind: str = ""  # "holidays" or "sports" for such subscribed calendars, else ""
    # The person's answer to an invitation (Google's responseStatus: accepted, tentative,
    # declined, needsAction); "" for their own events and sources that do not say.
    self_response: str = ""
    # The name of the calendar the event comes from, when it has one a person chose
    # ("Kurse.ics", a "Training" calendar); "" for opaque ids.
    calendar_name: str = ""
    # Where it happens, as the source wrote it ("Aquapark Wrocław", "Sala 2.14"), and
    # whether the person organizes it (Google's organizer.self; unknown in a plain file).
    location: str = ""
    organized_by_me: bool = False
    # The action the person's answers about its calendar mostly give, when one clearly
    # leads (`LayeredClassifier.calendar_lean`): a timetable, a club's fixtures.
    calendar_lean: str = ""


# Where an answer comes from: the person's correction (or a label they gave), the event's
# declared type, a keyword rule, the learned model, the LLM, the event's shape, nothing.
LAYERS = ("override", "user", "event_type", "rules", "model", "llm", "context", "none")


@dataclass(frozen=True, slots=True)
class Classification:
    action: str  # one of ACTIONS, NOT_AN_ACTION or UNCLASSIFIED
    confidence: float
    layer: str  # one of LAYERS
    rule: str = ""

    @property
    def known(self) -> bool:
        return self.action != UNCLASSIFIED


@dataclass(frozen=True, slots=True)
class Rule:
    action: str
    priority: int
    keywords: tuple[str, ...]
    regex: re.Pattern[str] | None  # the rule's `patterns`, if any
    # Keyword words that end in "*" in the file: stems that also match the inflected or
    # compounded word ("trening*" finds "treningi", "lekarz*" finds "lekarza").
    stems: frozenset[str] = frozenset()
    # Keyword words that start with "*": compound heads that also match a longer word ending
    # in them ("*schicht" finds "Nachtschicht"). In German, Dutch, the Nordic languages and
    # Finnish a compound's last part says what it is: a "Fußballtraining" is a training.
    heads: frozenset[str] = frozenset()


# Letters that Unicode does not decompose into a base letter and an accent: folded by hand
# so that "Łyżwy" matches "lyzwy", "Møde" "mode" and Turkish dotless "ı" the plain "i".
_FOLD = str.maketrans({"ł": "l", "ø": "o", "æ": "ae", "œ": "oe", "ı": "i", "đ": "d", "ð": "d"})


def normalize(title: str) -> str:
    """Lower case, accents removed, whitespace folded: the form rules match against."""
    text = title.casefold()
    if not text.isascii():  # the common ASCII title has no accents to strip
        text = unicodedata.normalize("NFKD", text.translate(_FOLD))
        text = "".join(ch for ch in text if not unicodedata.combining(ch))
    return " ".join(text.split())


# Scripts written without spaces between words (Japanese, Chinese), and Korean, which joins
# particles and compounds to its words ("병원에", "영어수업"): a keyword in them is looked
# for anywhere in the title, not word by word. Korean is matched as the letters (jamo)
# that normalizing splits its syllables into.
HANGUL = "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af"
_CJK = f"\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff{HANGUL}"
_UNSPACED = re.compile(f"[{_CJK}]")


def unspaced(text: str) -> bool:
    """True when the text holds a character of a script written without word spaces."""
    return not text.isascii() and _UNSPACED.search(text) is not None


# Google's public holiday and sports calendars ("en.german#holiday@group.v.calendar.google.com")
# and .ics files named for holidays (the file's path is its calendar id).
_HOLIDAY_CALENDAR = re.compile(
    r"#holiday@|holiday|feiertag|ferien|jours?[-_ ]?feries|vacances|feriados|festivos|"
    r"feestdagen|schoolvakanties|festivita|festivi",
)
_SPORTS_CALENDAR = re.compile(r"#sports@")
_BILL_DASH = re.compile(r" [-–—] (?=\S)")


def billed_act(title: str) -> bool:
    """A venue's programme line: an act in capitals, a dash, the show's subtitle.

    "SONA JOBARTEH – Die Stimme Gambias", "A TRIBUTE TO AMY – Die Show": going to a show.
    At least two capitalised words of 3+ letters and no digits before the dash (course codes,
    rooms and shift codes have digits; "OOO – Jan" has one word).
    """
    parts = _BILL_DASH.split(title, maxsplit=1)
    if len(parts) != 2:
        return False
    head = parts[0].strip()
    if any(ch.isdigit() for ch in head) or not head.isupper():
        return False
    return sum(len(w) >= 3 and w.isalpha() for w in head.split()) >= 2


def calendar_kind(calendar_id: str) -> str:
    """'holidays' or 'sports' for a subscribed calendar of that kind, else ''."""
    ident = normalize(calendar_id.rsplit("/", 1)[-1])
    if _HOLIDAY_CALENDAR.search(ident):
        return "holidays"
    if _SPORTS_CALENDAR.search(ident):
        return "sports"
    return ""


# What a timetable line carries besides its subject: times and time ranges ("9h-12h30",
# "08:15–09:45", "8h45"), short codes of groups, rooms and buildings ("C1", "B5", "A204"),
# rooms and lecturers named with their marker ("Salle 12", "Raum E07", "M. Dupont").
_TIME = r"\d{1,2}(?:[:.h]\d{2}(?:\s?[ap]\.?m\.?)?|h|\s?[ap]\.?m\.?)"
_TIME_RANGE = re.compile(rf"(?<!\w){_TIME}\s*(?:-|–|—|/|à|a|to|bis)\s*{_TIME}(?!\w)")
_TIME_ALONE = re.compile(rf"(?<!\w){_TIME}(?!\w)")
_CODE = re.compile(r"(?<!\w)[a-z]{1,3}\d{1,4}[a-z]?(?:[.-]\d{1,3})?(?!\w)")
_MARKED = re.compile(
    r"(?<!\w)(?:salle|sala|aula|room|rm|raum|hs|amphi|bat|batiment|bldg|gebaude|lokaal|"
    r"m|mme|mr|mrs|ms|prof|herr|frau|sig|sr|sra)\.?\s+[\w.-]+"
)
_LEFTOVER = re.compile(r"[\s\-–—/|,;:()\[\]]+")


def strip_times(text: str) -> str:
    """A normalized title without its times and time ranges ("trening 18:00" -> "trening")."""
    if not any(ch.isdigit() for ch in text):
        return text
    return " ".join(_TIME_ALONE.sub(" ", _TIME_RANGE.sub(" ", text)).split())


def strip_codes(text: str) -> str:
    """A normalized title without its times, codes, rooms and named lecturers: the words a
    timetable line's subject is in ("c1 9h-12h30 algebre salle 12 m. dupont" -> "algebre")."""
    if not any(ch.isdigit() for ch in text) and "." not in text:
        return text
    text = _TIME_RANGE.sub(" ", text)
    text = _TIME_ALONE.sub(" ", text)
    text = _MARKED.sub(" ", text)
    text = _CODE.sub(" ", text)
    return " ".join(_LEFTOVER.sub(" ", text).split())


def model_text(title: str) -> str:
    """What the learned model reads: a title with a time range loses its times, codes and
    rooms (the model learnt words, and a timetable line's words are its subject); any other
    title is read as written, as the model was trained."""
    if not any(ch.isdigit() for ch in title):
        return title
    text = normalize(title)
    if _TIME_RANGE.search(text) is None:
        return title
    return strip_codes(text) or title


def timetable_line(title: str) -> bool:
    """A time range and a short code in one title: a line of a school or university
    timetable ("C1 9h-12h30 …", "B5 8h45-11h45 …"), which the rubric reads as a class."""
    text = normalize(title)
    return _TIME_RANGE.search(text) is not None and _CODE.search(text) is not None


def calendar_name(calendar_id: str) -> str:
    """The name a person gave a calendar, from its id: the file name of an .ics path
    ("/cal/Kurse.ics" -> "Kurse"); "" for an e-mail-like or opaque id (Google's)."""
    name = calendar_id.replace("\\", "/").rsplit("/", 1)[-1]
    name = re.sub(r"\.(?:ics|ical|ifb|vcs)$", "", name, flags=re.IGNORECASE)
    if "@" in name or not re.search(r"[^\W\d_]{3}", name):
        return ""
    return re.sub(r"[_\-.]+", " ", name).strip()


class RulesError(ValueError):
    """The rules file is unusable; the message names the file and the rule."""


# A run of an unspaced script is one token apart from Latin letters and digits next to it,
# so that "週次MTG" holds the word "mtg" and "1on1ミーティング" the word "1on1".
_TOKENS = re.compile(rf"[{_CJK}]+|[^\W{_CJK}]+|[^\w\s]")
_ASCII_TOKENS = re.compile(r"\w+|[^\w\s]")  # the same for the common ASCII title, faster
MAX_KEYWORD_TOKENS = 6
MIN_STEM = 3  # a shorter stem would find too many unrelated words
MIN_HEAD = 4  # a compound head as short as "les" or "tid" ends too many unrelated words
MIN_MODIFIER = 3  # letters a word needs before a head to be a compound ("nacht|schicht")


def tokens(text: str) -> tuple[str, ...]:
    """Words and single punctuation marks of a normalized text: what keywords match on."""
    return tuple((_ASCII_TOKENS if text.isascii() else _TOKENS).findall(text))


def load_rules(path: Path | None = None) -> tuple[str, tuple[Rule, ...]]:
    """The rules (highest priority first) and their version, from `path` or the bundled file."""
    source = path or files("mappings").joinpath("classifier_rules.toml")
    name = str(path or "classifier_rules.toml")
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise RulesError(f"{name}: cannot read rules: {err}") from None
    rules = []
    for i, raw in enumerate(data.get("rule", [])):
        action = raw.get("action", "")
        if action not in LABELS:
            raise RulesError(f"{name}: rule {i + 1}: unknown action {action!r}")
        patterns = list(raw.get("patterns", []))
        try:
            regex = re.compile("|".join(patterns)) if patterns else None
        except re.error as err:
            raise RulesError(f"{name}: rule {i + 1} ({action}): bad pattern: {err}") from None
        stems: set[str] = set()
        heads: set[str] = set()
        keywords = []
        for k in raw.get("keywords", []):
            words: list[str] = []
            for word in normalize(k).split():
                if word.startswith("*") and len(word) > 1:
                    word = word[1:]
                    if len(tokens(word)) != 1 or len(word) < MIN_HEAD or word.endswith("*"):
                        raise RulesError(
                            f"{name}: rule {i + 1} ({action}): compound head *{word!r} must "
                            f"be one word of at least {MIN_HEAD} letters"
                        )
                    heads.add(word)
                    # Kept apart from the bare word: "*training" is what a compound ending
                    # in "training" reads as; the word "training" alone is whatever the
                    # rules that list it say.
                    words.append(f"*{word}")
                    continue
                if word.endswith("*") and len(word) > 1:
                    word = word[:-1]
                    if len(tokens(word)) != 1 or len(word) < MIN_STEM:
                        raise RulesError(
                            f"{name}: rule {i + 1} ({action}): stem {word!r}* must be one "
                            f"word of at least {MIN_STEM} letters"
                        )
                    stems.add(word)
                words.extend(tokens(word))
            keywords.append(" ".join(words))
        if any(len(k.split()) > MAX_KEYWORD_TOKENS for k in keywords):
            raise RulesError(f"{name}: rule {i + 1} ({action}): keyword longer than 6 words")
        rules.append(
            Rule(
                action,
                int(raw.get("priority", 0)),
                tuple(keywords),
                regex,
                frozenset(stems),
                frozenset(heads),
            )
        )
    rules.sort(key=lambda r: -r.priority)
    return str(data.get("version", "")), tuple(rules)


@lru_cache(maxsize=8)
def _cached_rules(path: str) -> tuple[str, tuple[Rule, ...]]:
    return load_rules(Path(path) if path else None)


class KeywordClassifier:
    """Event-type hints, then keyword rules (the highest-priority rule with a hit wins)."""

    confidence = 0.9

    def __init__(self, rules_file: str | Path | None = None) -> None:
        self.version, self.rules = _cached_rules(str(rules_file or ""))
        self._stems = frozenset(s for r in self.rules for s in r.stems)
        self._longest_stem = max(map(len, self._stems), default=0)
        self._heads = frozenset(h for r in self.rules for h in r.heads)
        # One-word keywords are matched as written: "ready" stays "ready" even if "read*"
        # were a stem.
        self._single = frozenset(k for r in self.rules for k in r.keywords if " " not in k)
        self._folded: dict[str, str] = {}
        # keyword (folded tokens joined by spaces) -> index of the first rule that has it
        self._index: dict[str, int] = {}
        # first token of a keyword -> most tokens a keyword starting with it has
        self._starts: dict[str, int] = {}
        for i, rule in enumerate(self.rules):
            for k in rule.keywords:
                first, *rest = words = [self._fold(w) for w in k.split(" ")]
                self._index.setdefault(" ".join(words), i)
                self._starts[first] = max(self._starts.get(first, 0), 1 + len(rest))
        self._patterns = [(i, r.regex) for i, r in enumerate(self.rules) if r.regex is not None]
        self._gate = PatternGate([regex for _, regex in self._patterns])
        # Keywords in unspaced scripts, found as substrings: (keyword, rule index), best first.
        self._unspaced = sorted(
            (
                (k.replace(" ", ""), i)
                for i, r in enumerate(self.rules)
                for k in r.keywords
                if unspaced(k)
            ),
            key=lambda ki: ki[1],
        )

    def _fold(self, tok: str) -> str:
        """The stem a title word is an inflected form of, the head of the compound it is, or
        the word itself (cached: a calendar's words are few)."""
        found = self._folded.get(tok)
        if found is not None:
            return found
        found = tok
        if len(tok) > MIN_STEM and tok not in self._single:
            # The longest stem wins: "hiihtoloma" is "hiihtolom*", not "hiihto*".
            for n in range(min(len(tok), self._longest_stem), MIN_STEM - 1, -1):
                if tok[:n] in self._stems:
                    found = tok[:n]
                    break
            else:
                # The longest head wins: "kindergottesdienst" is a "*gottesdienst".
                for n in range(MIN_MODIFIER, len(tok) - MIN_HEAD + 1):
                    if tok[n:] in self._heads:
                        found = f"*{tok[n:]}"
                        break
        if len(self._folded) < 100_000:  # bounded whatever it is fed
            self._folded[tok] = found
        return found

    def match(self, event: EventInfo) -> Classification | None:
        """The event-type or rules answer, or None when neither knows."""
        if event.self_response == "declined":
            # Whatever it is, the person said they will not be there.
            return Classification(NOT_AN_ACTION, 0.95, "event_type", "declined")
        if event.event_type == "focusTime":
            return Classification("DEEP_WORK", 0.95, "event_type", "eventType=focusTime")
        if event.event_type in ("outOfOffice", "workingLocation", "birthday"):
            return Classification(
                NOT_AN_ACTION, 0.95, "event_type", f"eventType={event.event_type}"
            )
        if event.calendar_kind == "holidays":
            # Everything a holiday calendar holds is a day's name, not a plan.
            return Classification(NOT_AN_ACTION, 0.95, "event_type", "calendar=holidays")
        if event.calendar_kind == "sports" and not event.all_day:
            # A subscribed sports calendar's timed entries are fixtures: watching, not playing
            # (its all-day ones are birthdays and season markers).
            return Classification("BINGE_WATCH", 0.8, "event_type", "calendar=sports")
        found = self.match_title(event.title)
        if found is None and timetable_line(event.title):
            return Classification("LEARN", 0.6, "rules", "timetable line")
        if found is None and billed_act(event.title):
            return Classification("SOCIALIZE", 0.6, "rules", "billed act")
        if found is None and event.event_type == "fromGmail":
            # Copied from a booking e-mail (a flight, a hotel stay, a parcel); a title the
            # rules know ("Dinner reservation at ...") keeps its own answer.
            return Classification(NOT_AN_ACTION, 0.8, "event_type", "eventType=fromGmail")
        return found

    def match_title(self, title: str) -> Classification | None:
        text = normalize(title)
        if not text:
            return None
        best, hit = len(self.rules), ""
        toks = tokens(text)
        if self._stems or self._heads:
            folded = self._folded
            toks = tuple([folded.get(t) or self._fold(t) for t in toks])
        if self._unspaced and unspaced(text):
            squeezed = text.replace(" ", "")
            for k, rule_no in self._unspaced:
                if rule_no >= best:
                    break
                if k in squeezed:
                    best, hit = rule_no, k
                    break
        index, starts = self._index, self._starts
        for start, tok in enumerate(toks):
            longest = starts.get(tok)
            if longest is None:
                continue
            for end in range(start + 1, min(start + longest, len(toks)) + 1):
                i = index.get(" ".join(toks[start:end]))
                if i is not None and i < best:
                    best, hit = i, " ".join(toks[start:end])
        best, hit = self._first_pattern(text, best, hit)
        if best == len(self.rules):
            return None
        return Classification(self.rules[best].action, self.confidence, "rules", hit)

    def _first_pattern(self, text: str, best: int, hit: str) -> tuple[int, str]:
        """The first pattern rule ahead of rule `best` that matches, or `best` as it was."""
        maybe: frozenset[int] | None = None  # found only when a gated pattern is reached
        for pos, (i, regex) in enumerate(self._patterns):
            if i >= best:
                break
            if pos not in self._gate.always:
                if maybe is None:
                    maybe = self._gate.candidates(text)
                if pos not in maybe:
                    continue
            if m := regex.search(text):
                return i, m.group(0)
        return best, hit

    def classify(self, event: EventInfo | str) -> Classification:
        if isinstance(event, str):
            event = EventInfo(title=event)
        found = self.match(event)
        if found is not None:
            return found
        if event.all_day:
            # An all-day entry nobody recognises is a marker, not a chosen activity.
            return Classification(NOT_AN_ACTION, 0.6, "context", "all-day")
        return Classification(UNCLASSIFIED, 0.0, "none")
