"""The evidence check on claim verdicts: worked out by hand from the chunk texts below.

The content words of the two chunks, as Snowball stems: payment, histori, import, factor, credit, score, amount,
owe, come, second; phish, email, ask, password, bank, never ("the", "most", "for", "by", "of", "is" are function
words or shorter than three letters)."""

from __future__ import annotations

from ragmeter.metrics.claim_evidence import checked_claims, content_words, numbers_found, words_covered
from ragmeter.metrics.judged import Claim

CHUNKS = ["Payment history is the most important factor of a credit score. Amounts owed come second.",
          "Phishing emails ask for passwords. Banks never ask for a password by email."]
ANSWER_SENTENCE = "FICO weighs payment history at 35% and amounts owed at 30%."


def verdicts(claims: list[Claim]) -> list[str]:
    return [claim.verdict for claim in checked_claims(claims, CHUNKS)]


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
    (checked,) = checked_claims([claim], CHUNKS)
    assert checked.verdict == "unsupported" and checked.chunks == ()
    # scam names no chunk mentions, however well the "evidence" matches a chunk
    assert verdicts([Claim("Scammers use fake lottery wins and romance scams.", "supported", (2,),
                           "Phishing emails ask for passwords.")]) == ["unsupported"]


def test_any_chunk_may_hold_the_claim_whichever_the_judge_names() -> None:
    assert verdicts([Claim("Banks never email for passwords.", "supported", (1,), ""),
                     Claim("Banks never email for passwords.", "supported", (7,), "")]) == ["supported", "supported"]


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
    claims = [Claim("Payment history is 10% of a score.", "contradicted", (1,), "nothing like this"),
              Claim("Something else.", "unsupported", (), "")]
    assert checked_claims(claims, CHUNKS) == tuple(claims)


def test_a_scope_word_no_chunk_holds_makes_a_claim_unsupported() -> None:
    assert verdicts([Claim("Everyone knows banks never ask for a password by email.", "supported", (2,), ""),
                     Claim("Banks never ask for a password by email.", "supported", (2,), "")]) == [
        "unsupported", "supported"]  # "never" is in the chunk, "everyone" is not
