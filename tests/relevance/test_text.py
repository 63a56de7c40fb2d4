from __future__ import annotations

import sys
import unicodedata

import pytest

from contextwindow.errors import ArgumentError, ArgumentTypeError, InvalidMessageError
from contextwindow.messages import Message, Thinking, ToolCall
from contextwindow.relevance import (
    STOPWORDS,
    BM25Scorer,
    TermCache,
    document,
    terms,
    when,
)
from contextwindow.relevance._stem import stem

# Examples from Porter's paper ("An algorithm for suffix stripping", 1980),
# step by step; each word is followed by its stem after all steps.
PORTER = {
    "caresses": "caress",
    "ponies": "poni",
    "ties": "ti",
    "caress": "caress",
    "cats": "cat",
    "feed": "feed",
    "agreed": "agre",
    "plastered": "plaster",
    "bled": "bled",
    "motoring": "motor",
    "sing": "sing",
    "conflated": "conflat",
    "troubled": "troubl",
    "sized": "size",
    "hopping": "hop",
    "tanned": "tan",
    "falling": "fall",
    "hissing": "hiss",
    "fizzed": "fizz",
    "failing": "fail",
    "filing": "file",
    "happy": "happi",
    "sky": "sky",
    "relational": "relat",
    "conditional": "condit",
    "rational": "ration",
    "valenci": "valenc",
    "hesitanci": "hesit",
    "digitizer": "digit",
    "conformabli": "conform",
    "radicalli": "radic",
    "differentli": "differ",
    "vileli": "vile",
    "analogousli": "analog",
    "vietnamization": "vietnam",
    "predication": "predic",
    "operator": "oper",
    "feudalism": "feudal",
    "decisiveness": "decis",
    "hopefulness": "hope",
    "callousness": "callous",
    "formaliti": "formal",
    "sensitiviti": "sensit",
    "sensibiliti": "sensibl",
    "triplicate": "triplic",
    "formative": "form",
    "formalize": "formal",
    "electriciti": "electr",
    "electrical": "electr",
    "hopeful": "hope",
    "goodness": "good",
    "revival": "reviv",
    "allowance": "allow",
    "inference": "infer",
    "airliner": "airlin",
    "gyroscopic": "gyroscop",
    "adjustable": "adjust",
    "defensible": "defens",
    "irritant": "irrit",
    "replacement": "replac",
    "adjustment": "adjust",
    "dependent": "depend",
    "adoption": "adopt",
    "homologou": "homolog",
    "communism": "commun",
    "activate": "activ",
    "angulariti": "angular",
    "homologous": "homolog",
    "effective": "effect",
    "bowdlerize": "bowdler",
    "probate": "probat",
    "rate": "rate",
    "cease": "ceas",
    "controll": "control",
    "roll": "roll",
    "generalizations": "gener",
    "oscillators": "oscil",
}


class TestStem:
    @pytest.mark.parametrize(("word", "expected"), sorted(PORTER.items()))
    def test_porter_paper_examples(self, word: str, expected: str) -> None:
        """Each example of Porter's paper stems as the paper says."""
        assert stem(word) == expected

    def test_short_words_are_left_alone(self) -> None:
        """Words of one or two letters are not stemmed (as in the reference code)."""
        assert [stem(w) for w in ("is", "as", "s", "ys")] == ["is", "as", "s", "ys"]

    def test_y_after_a_consonant_is_a_vowel(self) -> None:
        """'y' counts as a vowel after a consonant, a consonant after a vowel."""
        assert stem("syzygy") == "syzygi"
        assert stem("toy") == "toi"
        assert stem("enjoying") == "enjoi"


class TestTerms:
    def test_words_are_lowercased_stemmed_and_stopwords_dropped(self) -> None:
        """Function words and single letters go; inflections meet at one stem."""
        assert terms("She PAINTED paintings, and I'm painting!") == [
            "paint",
            "paint",
            "paint",
        ]

    def test_digits_and_mixed_words_are_kept_as_they_are(self) -> None:
        """Numbers and words with digits are terms, not stemmed."""
        assert terms("room 404 on v2 in 2023") == ["room", "404", "v2", "2023"]

    def test_cjk_is_one_term_per_character(self) -> None:
        """Scripts without spaces are split into characters."""
        assert terms("東京の天気") == ["東", "京", "の", "天", "気"]
        assert terms("서울 날씨") == ["서", "울", "날", "씨"]

    def test_other_scripts_keep_their_words(self) -> None:
        """Accented and non-Latin words are lowercased, not stemmed."""
        assert terms("Café Москва") == ["café", "москва"]

    def test_one_word_written_two_ways_is_one_term(self) -> None:
        """NFC and NFD, a ligature, full-width letters, ß: folded to one form."""
        composed = "Café in İstanbul"
        decomposed = unicodedata.normalize("NFD", composed)
        assert composed != decomposed
        assert terms(decomposed) == terms(composed) == ["café", "i\u0307stanbul"]
        assert terms("\ufb01le \uff26\uff29\uff2c\uff25") == [
            "file",
            "file",
        ]  # ﬁle, full-width
        assert terms("Straße STRASSE") == ["strass", "strass"]

    def test_combining_marks_stay_in_their_word(self) -> None:
        """Vowel signs and viramas (Mn, Mc) do not split a word."""
        assert terms("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]
        assert terms("สวัสดีครับ") == ["สวัสดีครับ"]

    def test_a_decomposed_query_finds_the_composed_text(self) -> None:
        """BM25 scores an NFD query against NFC text as the NFC query."""
        docs = ["We met at the café downtown.", "The build is green."]
        query = unicodedata.normalize("NFD", "the café?")
        assert BM25Scorer(context=())(docs, query) == [1.0, 0.0]

    def test_every_combining_mark_is_in_the_word_class(self) -> None:
        """The marks' class holds every Mn and Mc code point of unicodedata."""
        from contextwindow.relevance._text import _unicode_words

        marks = [
            chr(cp)
            for cp in range(sys.maxunicode + 1)
            if unicodedata.category(chr(cp)) in ("Mn", "Mc")
        ]
        word = _unicode_words()
        assert all(word.fullmatch("a" + m) for m in marks)
        assert not word.fullmatch("a_")

    def test_underscores_and_punctuation_split(self) -> None:
        """Identifiers split into their words."""
        assert terms("read_file(path='app.py')") == [
            "read",
            "file",
            "path",
            "app",
            "py",
        ]

    def test_stopwords_are_lowercase_words(self) -> None:
        """The stopword list is lowercase and excludes content words."""
        assert all(w == w.lower() for w in STOPWORDS)
        assert {"the", "what", "did"} <= STOPWORDS
        assert not {"paint", "dog", "city"} & STOPWORDS


class TestDocument:
    def test_a_message_line_holds_name_date_text_and_calls(self) -> None:
        """Speaker, date, text, reasoning, calls and results, a line per message."""
        unit = [
            Message.assistant(
                [Thinking("check the file"), Thinking("", "sig", redacted=True)],
                tool_calls=[ToolCall("c1", "read_file", '{"path": "a.py"}')],
                name="coder",
                meta={"timestamp": "2026-02-10T09:15:00Z"},
            ),
            Message.tool("c1", "print('hi')"),
        ]
        assert document(unit) == (
            "coder 10 February 2026 check the file read_file "
            '{"path": "a.py"}\n'
            "print('hi')"
        )

    def test_locomo_dates_and_captions(self) -> None:
        """A LoCoMo turn: speaker, session date and the image caption part."""
        turn = Message.user(
            "Look at this!",
            name="Caroline",
            meta={"date_time": "1:56 pm on 8 May, 2023", "dia_id": "D1:5"},
        )
        turn = turn.with_parts(
            [*turn.parts, *Message.user("[shared an image: a dog]").parts]
        )
        assert (
            document([turn])
            == "Caroline 8 May 2023 Look at this! [shared an image: a dog]"
        )


class TestWhen:
    @pytest.mark.parametrize(
        ("meta", "expected"),
        [
            ({"date_time": "10:37 am on 27 June, 2023"}, "27 June 2023"),
            ({"date_time": "on 3 may 2024"}, "3 May 2024"),
            ({"date_time": "yesterday"}, ""),
            ({"date_time": "yesterday", "timestamp": "2024-01-02"}, "2 January 2024"),
            ({"timestamp": "2026-12-31T23:59:59.999+01:00"}, "31 December 2026"),
            ({"timestamp": "not a date"}, ""),
            ({"timestamp": 1700000000}, ""),
            ({}, ""),
        ],
    )
    def test_dates_from_meta(self, meta: dict[str, object], expected: str) -> None:
        """date_time text or an ISO timestamp becomes 'day Month year'."""
        assert when(meta) == expected


class TestArguments:
    @pytest.mark.parametrize("bad", [None, True, 5, b"x"])
    def test_terms_takes_a_str(self, bad: object) -> None:
        """A non-str is named, not an AttributeError ('lower')."""
        with pytest.raises(ArgumentTypeError, match=r"^text: expected a str"):
            terms(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [None, "12", True, ["date_time"]])
    def test_when_takes_a_mapping(self, bad: object) -> None:
        """A meta that is no mapping is named, not an AttributeError ('get')."""
        with pytest.raises(ArgumentTypeError, match=r"^meta: expected a mapping"):
            when(bad)  # type: ignore[arg-type]  # the wrong type on purpose

    @pytest.mark.parametrize("bad", [None, "12", True, 5])
    def test_document_takes_messages(self, bad: object) -> None:
        """A non-iterable or a str is named; so is an item that is no message."""
        with pytest.raises(ArgumentTypeError, match=r"^messages: expected an iter"):
            document(bad)  # type: ignore[arg-type]  # the wrong type on purpose
        with pytest.raises(InvalidMessageError, match=r"^messages\[1\]: expected a M"):
            document([Message.user("a"), bad])  # type: ignore[list-item]  # the wrong type on purpose
        assert document(m for m in [Message.user("a b")]) == "a b"

    @pytest.mark.parametrize("bad", ["12", None, 1.5, 0])
    def test_term_cache_size(self, bad: object) -> None:
        """A size that is no int >= 1 is named, not a TypeError from the cache."""
        with pytest.raises(ArgumentError, match=r"^size: expected an int >= 1"):
            TermCache(bad)  # type: ignore[arg-type]  # the wrong type on purpose
