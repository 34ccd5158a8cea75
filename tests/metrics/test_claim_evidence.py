"""The evidence check on claim verdicts: worked out by hand from the chunk texts below.

The content words of the two chunks, as Snowball stems: payment, histori, import, factor, credit, score, amount,
owe, come, second; phish, email, ask, password, bank, never ("the", "most", "for", "by", "of", "is" are function
words or shorter than three letters)."""

from __future__ import annotations

from ragmeter.judges.checks.evidence import (
    Claim,
    checked_claims,
    content_words,
    left_out,
    numbers_found,
    supporting_chunks,
    verified_claims,
    words_covered,
)

CHUNKS = [
    "Payment history is the most important factor of a credit score. Amounts owed come second.",
    "Phishing emails ask for passwords. Banks never ask for a password by email.",
]
ANSWER_SENTENCE = "FICO weighs payment history at 35% and amounts owed at 30%."


def checked(claims: list[Claim]) -> tuple[Claim, ...]:
    """The check of ``claims`` on a text that is the claims themselves (so no sentence is left out)."""
    return checked_claims(claims, CHUNKS, " ".join(claim.text for claim in claims))


def verdicts(claims: list[Claim]) -> list[str]:
    return [claim.verdict for claim in checked(claims)]


def test_a_claim_in_the_chunks_own_words_keeps_a_supported_verdict() -> None:
    claim = Claim("Payment history matters most for a credit score.", "supported", (1,), "")
    # payment, histori, matter, credit, score: 4 of 5 in chunk 1 ("matters" is not), 0.8 ≥ 0.7
    assert verdicts([claim]) == ["supported"]


def test_a_paraphrase_with_the_same_stems_is_covered() -> None:
    # bank, never, email, password: "emails" and "passwords" meet "email" and "password" through their stems
    assert verdicts([Claim("Banks never email for passwords.", "supported", (2,), "")]) == ["supported"]


def test_the_claim_must_be_in_the_chunks_not_in_the_quoted_evidence() -> None:
    # fico, weigh, payment, histori, amount, owe: 4 of 6 covered (0.67 < 0.7), and 35 and 30 are in no chunk
    claim = Claim(ANSWER_SENTENCE, "supported", (1,), ANSWER_SENTENCE)
    (only,) = checked([claim])
    assert only.verdict == "unsupported" and only.chunks == ()
    # scam names no chunk mentions, however well the "evidence" matches a chunk
    assert verdicts(
        [
            Claim(
                "Scammers use fake lottery wins and romance scams.",
                "supported",
                (2,),
                "Phishing emails ask for passwords.",
            )
        ]
    ) == ["unsupported"]


def test_any_chunk_may_hold_the_claim_whichever_the_judge_names() -> None:
    assert verdicts(
        [
            Claim("Banks never email for passwords.", "supported", (1,), ""),
            Claim("Banks never email for passwords.", "supported", (7,), ""),
        ]
    ) == ["supported", "supported"]


def test_seven_tenths_of_the_content_words_must_be_covered() -> None:
    # 6 of 8 stems in the chunks (length, decid missing): 0.75; then 4 of 8 (mix, new, account, decid): 0.5
    assert words_covered("Payment history, amounts owed and credit length decide a credit score.", CHUNKS)
    assert not words_covered("Payment history, credit mix and new accounts decide the score.", CHUNKS)
    assert content_words("And so it is.") == set() and words_covered("And so it is.", [])
    assert not words_covered("Payment history matters.", [])


def test_a_number_that_no_chunk_holds_makes_a_claim_unsupported() -> None:
    assert verdicts([Claim("Payment history is 35% of a credit score.", "supported", (1,), "")]) == ["unsupported"]
    assert numbers_found("Amounts owed come second, after 1 factor.", ["Only 1 factor comes first."])
    assert numbers_found("It costs 1,500 euros.", ["The fee is 1500 euros."])
    assert not numbers_found("It costs 1,500 euros.", [])


def test_contradicted_and_unsupported_verdicts_are_kept_as_given() -> None:
    claims = [
        Claim("Payment history is 10% of a score.", "contradicted", (1,), "nothing like this"),
        Claim("Something else.", "unsupported", (), ""),
    ]
    assert checked(claims) == tuple(claims)


def test_a_scope_word_no_chunk_holds_makes_a_claim_unsupported() -> None:
    assert verdicts(
        [
            Claim("Everyone knows banks never ask for a password by email.", "supported", (2,), ""),
            Claim("Banks never ask for a password by email.", "supported", (2,), ""),
        ]
    ) == ["unsupported", "supported"]  # "never" is in the chunk, "everyone" is not


def test_a_sentence_the_claims_leave_out_is_checked_on_its_own() -> None:
    claim = Claim("Payment history matters most for a credit score.", "supported", (1,), "")
    # the second sentence's fico and weigh are in no claim; on its own 2 of its 4 stems are covered, and 35 is in
    # no chunk
    assert checked_claims([claim], CHUNKS, f"{claim.text} FICO weighs payment history at 35%.") == (
        claim,
        Claim("FICO weighs payment history at 35%.", "unsupported"),
    )
    # phish is in no claim; phish, email, ask, password are all in chunk 2
    banks = Claim("Banks never ask for a password by email.", "supported", (2,), "")
    assert checked_claims([banks], CHUNKS, f"{banks.text} Phishing emails ask for passwords.") == (
        banks,
        Claim("Phishing emails ask for passwords.", "supported"),
    )


def test_only_sentences_with_a_content_word_no_claim_has_are_left_out() -> None:
    claims = ["Payment history matters most."]
    # "It matters most." has one content word, matter, which the claim has; "And so it is." has none
    assert left_out(claims, "Payment history matters. It matters most. And so it is.") == []
    assert left_out(claims, "Payment history matters. Amounts owed come second.") == ["Amounts owed come second."]
    assert left_out([], "Amounts owed come second. And so it is.") == ["Amounts owed come second."]


def test_a_citation_marker_is_no_word_of_a_sentence() -> None:
    # "[CIT:credit-2024]" would add cit, credit and 2024; without them the sentence is its claim's words
    text = "Payment history is the most important factor [CIT:credit-2024]."
    assert content_words(text) == {"payment", "histori", "import", "factor"}
    assert left_out(["Payment history is the most important factor."], text) == []
    assert numbers_found(text, CHUNKS)  # 2024 is the marker's, not the claim's


def test_a_split_judge_s_claims_are_verified_and_name_their_chunks() -> None:
    # payment, histori, factor: chunk 1; phish, email, ask, password: chunk 2; the left-out sentence "Banks sell
    # passwords.": bank, password in chunk 2, sell in none: 2 of 3 < 0.7, unsupported
    claims = verified_claims(
        ["Payment history is a factor.", "Phishing emails ask for passwords."],
        CHUNKS,
        "Payment history is a factor and phishing emails ask for passwords. Banks sell passwords.",
    )
    assert [(c.verdict, c.chunks) for c in claims] == [("supported", (1,)), ("supported", (2,)), ("unsupported", ())]
    # a claim whose words two chunks hold between them names both: payment (1), password (2)
    assert supporting_chunks(CHUNKS, "Payment passwords.") == (1, 2)
