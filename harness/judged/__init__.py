"""Measuring a judge, low beside the metrics: which claims the judged metrics count (`claims.py`), and the judge's
standing, its agreement with people and the floor it must clear before its verdicts fill in `passed`
(`standing.py`).
"""

from pdfrag.lazy import lazy_exports

_WHERE: dict[str, tuple[str, ...]] = {
    "claims": ("claim_key", "judged_claims"),
    "standing": ("FLOOR_VERDICTS", "HUMAN", "MIN_PER_VERDICT", "MIN_RECALL", "MIN_SHARED", "NO_JUDGE",
                 "JudgeAgreement", "JudgeStanding", "SampleKey", "Shared", "VerdictCheck", "judge_agreement",
                 "judge_note", "judge_prompt_sha256", "judge_refusal", "judge_standing", "judged_passed",
                 "judges_differ", "not_measured_text", "passed_from", "shared_claims"),
}
__all__, __getattr__ = lazy_exports("harness.judged", _WHERE)
