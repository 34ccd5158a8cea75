"""The evidence check on claim verdicts: worked out by hand from the chunk texts below."""

from __future__ import annotations

from ragmeter.metrics.claim_evidence import checked_claims, evidence_found, numbers_found
from ragmeter.metrics.judged import Claim

CHUNKS = ["Payment history is the most important factor of a credit score. Amounts owed come second.",
          "Phishing emails ask for passwords. Banks never ask for a password by email."]
ANSWER_SENTENCE = "FICO weighs payment history at 35% and amounts owed at 30%."


def verdicts(claims: list[Claim]) -> list[str]:
    return [claim.verdict for claim in checked_claims(claims, CHUNKS)]


def test_evidence_quoted_from_a_named_chunk_keeps_a_supported_verdict() -> None:
    claim = Claim("Payment history matters most for a credit score.", "supported", (1,),
                  "Payment history is the most important factor of a credit score.")
    assert verdicts([claim]) == ["supported"]


def test_evidence_copied_from_the_answer_itself_is_not_evidence() -> None:
    claim = Claim(ANSWER_SENTENCE, "supported", (1,), ANSWER_SENTENCE)
    (checked,) = checked_claims([claim], CHUNKS)
    assert checked.verdict == "unsupported" and checked.chunks == ()


def test_evidence_must_be_in_a_chunk_the_claim_names() -> None:
    quote = "Banks never ask for a password by email."
    assert verdicts([Claim("Banks never email for passwords.", "supported", (1,), quote),
                     Claim("Banks never email for passwords.", "supported", (2,), quote)]) == ["unsupported",
                                                                                                "supported"]


def test_a_title_or_a_few_words_of_a_chunk_are_not_enough() -> None:
    # 2 of the evidence's 8 words occur in chunk 2 ("phishing emails", its start): under the 80 % asked for
    claim = Claim("Scammers use fake lottery wins and romance scams.", "supported", (2,),
                  "Phishing emails: fake lottery wins and romance scams")
    assert verdicts([claim]) == ["unsupported"]
    assert evidence_found("Banks never ask for a password by post or email", CHUNKS[1])  # 8 of 10 words, in order
    assert not evidence_found("Banks never ask for a password by e-mail", CHUNKS[1])    # 7 of 9 ("e", "mail")
    assert not evidence_found("", CHUNKS[1])


def test_a_number_that_no_named_chunk_holds_makes_a_claim_unsupported() -> None:
    quote = "Payment history is the most important factor of a credit score."
    assert verdicts([Claim("Payment history is 35% of a credit score.", "supported", (1,), quote)]) == ["unsupported"]
    assert numbers_found("Amounts owed come second, after 1 factor.", ["Only 1 factor comes first."])
    assert numbers_found("It costs 1,500 euros.", ["The fee is 1500 euros."])
    assert not numbers_found("It costs 1,500 euros.", [])


def test_contradicted_and_unsupported_verdicts_are_kept_as_given() -> None:
    claims = [Claim("Payment history is 10% of a score.", "contradicted", (1,), "nothing like this"),
              Claim("Something else.", "unsupported", (), "")]
    assert checked_claims(claims, CHUNKS) == tuple(claims)


def test_a_chunk_number_out_of_range_names_no_chunk() -> None:
    claim = Claim("Banks never email for passwords.", "supported", (7,), "Banks never ask for a password by email.")
    assert verdicts([claim]) == ["unsupported"]


def test_a_scope_word_no_named_chunk_holds_makes_a_claim_unsupported() -> None:
    quote = "Banks never ask for a password by email."
    assert verdicts([Claim("Everyone knows banks never ask for a password by email.", "supported", (2,), quote),
                     Claim("Banks never ask for a password by email.", "supported", (2,), quote)]) == [
        "unsupported", "supported"]  # "never" is in the chunk, "everyone" is not
