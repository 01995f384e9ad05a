"""The model of issue #28, "exactly once at any bank": a Hypothesis state machine that plays a payer against the
sandbox bank (a real process, its own SQLite database) under a random bank profile, with random faults.

The payer fills in the payment form (its hidden ``intent``) and posts it, posts the same form again (Back,
reload, a second tab), sends the review page (once or twice, in the browser or "in the app"), edits a draft or
a refused payment, ticks "pay it again" after the bank refused a logical duplicate, presses "check now" on a
payment whose answer was lost (at once, or after the wait the page asks for), starts the approval, approves at
the bank's SCA screens or in the bank's app, abandons an SCA, cancels. Meanwhile the background looks at lost
answers, the bank's batches run, time passes (the portal's stored times are moved back and the bank's business
clock forward by as much) and the bank loses the next initiation answer (``drop-next-payment-answer``: a reset, a
broken TLS record, a held answer).

After every step (``invariant``):

- the bank holds at most one payment per intent that is not rejected or cancelled, and at most one approved
  one (read from the bank's own database, table ``pis_payment``, by the X-Request-IDs of the intent's
  payments);
- the portal never says "not sent" (DRAFT) or "refused" (REFUSED) for a payment the bank holds;
- no payment of unknown outcome can be edited (its edit page sends the payer away);
- one intent makes at most one payment in the portal.

At the end of each example (``teardown``) time passes beyond the replay window, the background checks run, the
batches run and the due polls read the status: every payment the bank may hold is then final, still polled
(``next_poll_at``) or in the staff queue (``staff_flagged_at``): nothing is lost.

Each example runs within one business day of the bank (``choose_bank`` moves the bank's clock to its next day
when the evening is near). "Time passes" moves the portal's stored times back, which keeps every interval but not
the calendar: the bank's midnight would fall at a moment unrelated to the portal's, while a real bank's day turns
with the real clock. The bank takes an absent execution date as its day, and its logical-duplicate check compares
execution dates, so a replay on the bank's next day is no duplicate of the first request: the portal ends the
replay window before the day turns in Oslo (``reconciliation.replay_window_end``, tested in test_initiation.py).

The portal's database is one transaction per example, rolled back at its end (the bank's is not: each example
gets amounts of its own, so the bank's logical-duplicate check never links two examples). ``STATS`` counts what
the runs saw, for ``make soak``.
"""

from __future__ import annotations

import itertools
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from django.db import transaction
from django.db.models import F
from django.test import Client, override_settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, initialize, invariant, rule

from core.bank import bank_client
from devtools.livebank import bank_sql
from payments.models import UNKNOWN_OUTCOME_STATES, Payment, PaymentState
from payments.services import polling, reconciliation
from payments.services.cancellation import payment_cancel
from payments.services.lifecycle import END_STATES
from tests.live_bank import BankBrowser, callback_target
from tests.payments.journeys import cross_border
from users.security import REAUTHENTICATED_KEY
from xs2a.psu import PsuContext

#: The bank's statuses of a payment that is over without being carried out.
ENDED_AT_BANK = ("RJCT", "CANC")
#: The portal's states saying "nothing of this is at the bank".
NOT_SENT_STATES = (PaymentState.DRAFT, PaymentState.REFUSED)
#: The portal's states of a payment the bank has and is still to carry out or end.
AT_THE_BANK = (PaymentState.INITIATED, PaymentState.AUTHORISING, PaymentState.AWAITING_STATUS)
#: Past the replay window (PAYMENT_REPLAY_WINDOW, 10 minutes by default).
PAST_THE_WINDOW = timedelta(minutes=11)
#: The most one "time passes" moves the clocks.
MOST_TIME_PER_STEP = timedelta(minutes=12)
#: The portal's stored times that "time passes" moves back (its clock is the real one).
_TIME_FIELDS = ("created_at", "submitted_at", "reconcile_at", "replay_not_before", "next_poll_at", "final_at")


@dataclass(frozen=True)
class BankProfile:
    """One running sandbox bank: its replay mode and the other profile settings it plays."""

    name: str
    replay: str
    settings: dict[str, str]
    base_path: str = ""


#: A small fixed set of banks (a process each), one per replay mode, the other profiles spread between them.
PROFILES = (
    BankProfile("same", "same", {"BANK_SIM_REQUEST_ID_REPLAY": "same"}),
    BankProfile(
        "conflict",
        "conflict",
        {
            "BANK_SIM_REQUEST_ID_REPLAY": "conflict",
            "BANK_SIM_BASE_PATH": "/psd2",
            "BANK_SIM_LINKS": "absolute",
            "BANK_SIM_STATUS_BEFORE_SCA": "ACTC",
            "BANK_SIM_SCA_APPROACH": "tpp-preferred",
            "BANK_SIM_CREDIT_FINAL": "ACCC",
        },
        base_path="/psd2",
    ),
    BankProfile(
        "new",
        "new",
        {
            "BANK_SIM_REQUEST_ID_REPLAY": "new",
            "BANK_SIM_BASE_PATH": "/psd2",
            "BANK_SIM_LINKS": "root-relative",
            "BANK_SIM_SCA_APPROACH": "decoupled",
            "BANK_SIM_DATETIMES": "naive",
        },
        base_path="/psd2",
    ),
)


@dataclass
class LiveBank:
    """A running bank of PROFILES and the portal user connected to it (made once, before the examples)."""

    profile: BankProfile
    base_url: str  # with the base path: the portal's BANK_BASE_URL
    database: Path
    user: object = None
    debtor_key: str = ""


@dataclass
class Stats:
    examples: int = 0
    steps: int = 0
    intents: int = 0
    bank_payments: int = 0
    duplicates: int = 0
    lost: int = 0
    by_bank: dict[str, int] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)  # the payments' states at the end of their example

    def summary(self) -> str:
        banks = ", ".join(f"{name} {count}" for name, count in sorted(self.by_bank.items()))
        return (
            f"exactly-once model: {self.examples} examples ({banks}), {self.steps} steps, {self.intents} intents, "
            f"{self.bank_payments} payments at the bank, {self.duplicates} duplicates, {self.lost} lost payments; "
            f"seen (review page answers, payment states at the end): {dict(sorted(self.states.items()))}"
        )


STATS = Stats()
#: Amounts no other example uses (the bank's logical-duplicate check looks 24 hours back, across examples).
_AMOUNT_BASES = itertools.count(1)


def _amount_base() -> Decimal:
    n = next(_AMOUNT_BASES)
    return Decimal("100.00") + Decimal(n % 90000) * Decimal("0.02") + Decimal(uuid.uuid4().int % 900) * 2


def _bank_rows(database: Path, request_ids: list[str]) -> list[tuple[str, str, str | None]]:
    """(request_id, status, authorised_at) of the bank's payments with these X-Request-IDs, from its database."""
    if not request_ids:
        return []
    marks = ",".join("?" * len(request_ids))
    return bank_sql(
        database,
        f"SELECT request_id, status, authorised_at FROM pis_payment WHERE request_id IN ({marks})",  # noqa: S608
        request_ids,
    )


def _bank_authorisations(database: Path, payment_id: str) -> list[str]:
    """The open decoupled authorisations of the bank's payment ``payment_id`` (its app asks the PSU)."""
    rows = bank_sql(
        database,
        "SELECT a.authorisation_id FROM pis_paymentauthorisation a "
        "JOIN pis_payment p ON a.payment_id = p.id WHERE p.payment_id = ? AND a.decoupled ORDER BY a.id",
        (payment_id,),
    )
    return [authorisation_id for (authorisation_id,) in rows]


#: Which of the payer's payments (or open SCAs) a step acts on: an index taken modulo how many there are, so
#: that what is drawn never depends on the bank's answers (Hypothesis replays a prefix of draws and expects the
#: same kinds of draws: no preconditions nor draws from lists that the live bank shapes).
PICK = st.integers(min_value=0, max_value=255)

PRESENCE = PsuContext(ip_address="127.0.0.1", http_method="POST", user_agent="exactly-once model")


class ExactlyOnceMachine(RuleBasedStateMachine):
    """The payer, the background and the bank's faults. ``banks`` is set by the test (the running banks)."""

    banks: list[LiveBank] = []
    steps = 30  # the examples' steps (set by the test): how far an example may move the bank's clock

    forms = Bundle("forms")

    def __init__(self) -> None:
        super().__init__()
        STATS.examples += 1
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self._settings = None
        self.bank: LiveBank | None = None
        self.client: Client | None = None
        self.amounts: tuple[str, str] = ("", "")
        self.posted: dict[uuid.UUID, tuple[str, dict]] = {}  # intent -> (url, data) of the form as posted
        self.redirects: dict[int, str] = {}  # payment pk -> the bank's SCA address the payer was sent to
        self.edit_refused: set[tuple[int, str]] = set()  # (payment, state) whose edit page sent the payer away
        self.armed = False  # a lost answer was armed at the bank in this example (disarmed at its end)

    # --- set-up and the end of an example --------------------------------------------------------------------

    @initialize(index=st.integers(min_value=0, max_value=len(PROFILES) - 1))
    def choose_bank(self, index: int) -> None:
        self.bank = self.banks[index % len(self.banks)]
        STATS.by_bank[self.bank.profile.name] = STATS.by_bank.get(self.bank.profile.name, 0) + 1
        self._settings = override_settings(BANK_BASE_URL=self.bank.base_url, BANK_TIMEOUT=1.0)
        self._settings.enable()
        bank_client.cache_clear()
        self._stay_within_the_banks_day()
        self.client = Client()
        self.client.force_login(self.bank.user)
        base = _amount_base()
        self.amounts = (f"{base:.2f}", f"{base + Decimal('0.01'):.2f}")

    def _stay_within_the_banks_day(self) -> None:
        """Move the bank's clock to its next day's first minute when the rest of its day is shorter than the most
        an example moves it (the module's docstring says why)."""
        answer = bank_client().request("GET", "/v1/sandbox/clock")
        assert answer.status == 200, answer.body
        now = datetime.fromisoformat(answer.json()["now"]).astimezone(UTC)
        next_day = datetime.combine(now.date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
        most = MOST_TIME_PER_STEP * self.steps + PAST_THE_WINDOW
        assert most < timedelta(hours=23), f"{self.steps} steps may take the bank past its day"
        if next_day - now <= most:
            self._sandbox("/v1/sandbox/clock", {"advanceSeconds": int((next_day - now).total_seconds()) + 60})

    def teardown(self) -> None:
        try:
            if self.bank is not None:
                self._disarm()
                self._settle_and_check()
        finally:
            if self._settings is not None:
                self._settings.disable()
                bank_client.cache_clear()
            transaction.set_rollback(True)
            self._atomic.__exit__(None, None, None)

    def _disarm(self) -> None:
        if self.armed:
            self._sandbox("/v1/sandbox/behaviour/drop-next-payment-answer", {"mode": "none"})
            self.armed = False

    def _settle_and_check(self) -> None:
        """Time passes beyond the replay window, the background and the batches run: every payment the bank may
        hold is final, still polled or with staff."""
        self._shift(PAST_THE_WINDOW)
        for pk in self._payments().filter(state__in=UNKNOWN_OUTCOME_STATES).values_list("pk", flat=True):
            reconciliation.reconciliation_check(payment_id=pk)
        reconciliation.unconfirmed_find_all()
        for _ in range(3):
            self._run_batches()
        lost = [
            (p.pk, p.state, p.transaction_status)
            for p in self._payments().exclude(state__in=[*END_STATES, *NOT_SENT_STATES])
            if p.next_poll_at is None and p.staff_flagged_at is None
        ]
        for state, messages in self._payments().values_list("state", "tpp_messages"):
            key = state + ("" if state != PaymentState.REFUSED else f" {[m.get('code') for m in messages]}")
            STATS.states[key] = STATS.states.get(key, 0) + 1
        rows = self._bank_by_intent()
        STATS.intents += len(rows)
        STATS.bank_payments += sum(len(r) for r in rows.values())
        if lost:
            STATS.lost += len(lost)
        assert not lost, f"payments neither final, polled nor with staff (pk, state, bank status): {lost}"

    # --- helpers ---------------------------------------------------------------------------------------------

    def _payments(self):
        return Payment.objects.filter(user=self.bank.user, intent_key__in=list(self.posted))

    def _sandbox(self, path: str, body: dict) -> dict:
        answer = bank_client().request("POST", path, json_body=body)
        assert answer.status == 200, (path, answer.status, answer.body)
        return answer.json()

    def _password_typed_now(self) -> None:
        session = self.client.session
        session[REAUTHENTICATED_KEY] = datetime.now(UTC).isoformat()
        session.save()

    def _shift(self, delta: timedelta) -> None:
        """Time passes for the portal: its stored times move back by ``delta`` (its clock is the real one)."""
        payments = self._payments()
        for name in _TIME_FIELDS:
            payments.exclude(**{f"{name}__isnull": True}).update(**{name: F(name) - delta})

    def _run_batches(self) -> None:
        self._sandbox("/v1/sandbox/batches/run", {})
        polling.polls_after_bank_batches()
        for pk in self._payments().filter(next_poll_at__isnull=False).values_list("pk", flat=True):
            polling.payment_poll(payment_id=pk)

    def _follow(self, pk: int, response) -> None:
        """Where a page sent the payer: to the bank's SCA screens (remembered, to approve or abandon) or not."""
        location = response.get("Location", "") if response.status_code == 302 else ""
        if location.startswith(self.bank.base_url.split("/psd2")[0]):
            self.redirects[pk] = location

    def _bank_by_intent(self) -> dict[uuid.UUID, list[tuple[str, str, str | None]]]:
        ids = dict(self._payments().values_list("request_id", "intent_key"))
        rows: dict[uuid.UUID, list] = {intent: [] for intent in self.posted}
        for request_id, status, authorised_at in _bank_rows(self.bank.database, [str(r) for r in ids]):
            rows[ids[uuid.UUID(request_id)]].append((request_id, status, authorised_at))
        return rows

    def _pick(self, pick: int, states=None) -> Payment | None:
        payments = self._payments()
        if states is not None:
            payments = payments.filter(state__in=states)
        pks = sorted(payments.values_list("pk", flat=True))
        if not pks:
            return None
        return Payment.objects.get(pk=pks[pick % len(pks)])

    # --- the payer's form --------------------------------------------------------------------------------------

    @rule(target=forms, which=st.integers(min_value=0, max_value=1))
    def fill_in_the_form(self, which: int):
        """A new form (its own intent), posted: a draft to review."""
        intent = uuid.uuid4()
        data = cross_border(self.bank.debtor_key, amount=self.amounts[which], intent=str(intent))
        response = self.client.post("/payments/new/", data)
        assert response.status_code == 302, response.content[:2000]
        self.posted[intent] = ("/payments/new/", data)
        return intent

    @rule(target=forms, which=st.integers(min_value=0, max_value=1), in_app=st.booleans())
    def pay(self, which: int, in_app: bool):
        """The whole of it at once: a new form posted, its review page sent."""
        intent = self.fill_in_the_form(which)
        payment = Payment.objects.get(user=self.bank.user, intent_key=intent)
        self._send(payment, in_app=in_app, times=1)
        return intent

    @rule(target=forms, which=st.integers(min_value=0, max_value=1), mode=st.sampled_from(["reset", "tls"]))
    def pay_and_the_answer_is_lost(self, which: int, mode: str):
        """As ``pay``, the bank losing the answer (the payment stored at the bank, its 201 never arriving)."""
        self.bank_loses_the_next_answer(mode)
        return self.pay(which, in_app=False)

    @rule(intent=forms)
    def post_the_same_form_again(self, intent):
        url, data = self.posted[intent]
        made = Payment.objects.filter(user=self.bank.user, intent_key=intent).first()
        before = Payment.objects.filter(user=self.bank.user).count()
        response = self.client.post(url, data)
        # 404: the edit page of a draft edited since (gone) when this form's own draft was replaced too.
        assert response.status_code == 302 or (made is None and response.status_code == 404), response.status_code
        if made is not None:  # the form's payment is shown again, never a second one made
            assert Payment.objects.filter(user=self.bank.user).count() == before
            assert f"/payments/{made.pk}/" in response["Location"], response["Location"]

    @rule(pick=PICK, in_app=st.booleans(), twice=st.booleans())
    def send_the_review_page(self, pick: int, in_app: bool, twice: bool):
        """The review page of one of the payer's payments sent (again: a double click, Back and send)."""
        payment = self._pick(pick)
        if payment is not None:
            self._send(payment, in_app=in_app, times=2 if twice else 1)

    def _send(self, payment: Payment, *, in_app: bool, times: int) -> None:
        posted = {"idempotency_key": str(payment.idempotency_key)}
        if in_app:
            posted["in_app"] = "on"
        for _ in range(times):
            self._password_typed_now()
            response = self.client.post(f"/payments/{payment.pk}/review/", posted)
            key = f"review {response.status_code}"
            STATS.states[key] = STATS.states.get(key, 0) + 1
            assert response.status_code in (302, 400, 409, 503), response.status_code
            self._follow(payment.pk, response)

    @rule(pick=PICK, same_amount=st.booleans(), pay_again=st.booleans())
    def edit(self, pick: int, same_amount: bool, pay_again: bool):
        """The edit page: for a draft or a refused payment, a new draft (with "pay it again" when offered)."""
        payment = self._pick(pick)
        if payment is None:
            return
        page = self.client.get(f"/payments/{payment.pk}/edit/")
        if page.status_code != 200:
            return
        intent = uuid.uuid4()
        form = dict(payment.form_data)
        if not same_amount:
            form["amount"] = self.amounts[1] if form.get("amount") == self.amounts[0] else self.amounts[0]
        form["intent"] = str(intent)
        if pay_again and page.context.get("offer_duplicate"):
            form["allow_logical_duplicate"] = "on"
        url = f"/payments/{payment.pk}/edit/"
        response = self.client.post(url, form)
        assert response.status_code in (200, 302), response.status_code
        if response.status_code == 302:
            self.posted[intent] = (url, form)

    # --- lost answers ------------------------------------------------------------------------------------------

    @rule(pick=PICK, wait=st.booleans())
    def check_now(self, pick: int, wait: bool):
        """Press "check now": at once, or after the wait the page asked for ("Check again after ...") if short."""
        payment = self._pick(pick, states=UNKNOWN_OUTCOME_STATES)
        if payment is None:
            return
        asked = payment.replay_not_before
        if wait and asked is not None and timedelta(0) < asked - datetime.now(UTC) <= MOST_TIME_PER_STEP:
            self._time_passes_by(asked - datetime.now(UTC) + timedelta(seconds=1))
        response = self.client.post(f"/payments/{payment.pk}/reconcile/")
        assert response.status_code in (200, 302), response.status_code  # 200: UNCONFIRMED, with staff
        self._follow(payment.pk, response)

    @rule()
    def background_checks(self):
        for pk in reconciliation.reconciliations_due():
            reconciliation.reconciliation_check(payment_id=pk)
        reconciliation.unconfirmed_find_all()

    @rule(mode=st.sampled_from(["reset", "tls", "reset", "tls", "reset", "tls", "timeout"]))
    def bank_loses_the_next_answer(self, mode: str):
        body = {"mode": mode, **({"delaySeconds": 2} if mode == "timeout" else {})}
        self._sandbox("/v1/sandbox/behaviour/drop-next-payment-answer", body)
        self.armed = True

    # --- approval ----------------------------------------------------------------------------------------------

    @rule(pick=PICK, in_app=st.booleans())
    def start_the_approval(self, pick: int, in_app: bool):
        payment = self._pick(pick, states=(PaymentState.INITIATED, PaymentState.AUTHORISING))
        if payment is None:
            return
        response = self.client.post(f"/payments/{payment.pk}/approve/", {"in_app": "on"} if in_app else {})
        assert response.status_code == 302, response.status_code
        self._follow(payment.pk, response)

    @rule(pick=PICK, cancel=st.booleans())
    def at_the_banks_sca_screens(self, pick: int, cancel: bool):
        """Approve (or cancel) at the bank's screens; the bank's redirect back is followed in the portal."""
        if not self.redirects:
            return
        href = self.redirects.pop(sorted(self.redirects)[pick % len(self.redirects)])
        browser = BankBrowser()
        page = browser.http.get(href, timeout=15, allow_redirects=False)
        if page.status_code in (301, 302, 303):  # expired: the bank sends the payer back with its error
            location = page.headers["Location"]
        elif page.status_code != 200:  # finished (the back button)
            return
        else:
            try:
                location = browser.authorise(href, cancel=cancel)
            except AssertionError:  # the bank's screens refused the approval (ended, superseded): abandoned
                return
        path, params = callback_target(location)
        back = self.client.get(path, params)
        assert back.status_code in (200, 302, 400), back.status_code

    @rule(pick=PICK)
    def abandon_the_sca(self, pick: int):
        if self.redirects:
            self.redirects.pop(sorted(self.redirects)[pick % len(self.redirects)])

    @rule(pick=PICK, approve=st.booleans())
    def in_the_banks_app(self, pick: int, approve: bool):
        payment = self._pick(pick, states=(PaymentState.AUTHORISING, PaymentState.AWAITING_STATUS))
        if payment is None or not payment.payment_id:
            return
        for authorisation_id in _bank_authorisations(self.bank.database, payment.payment_id):
            answer = bank_client().request(
                "POST",
                f"/v1/sandbox/payment-authorisations/{authorisation_id}",
                json_body={"action": "approve" if approve else "refuse"},
            )
            assert answer.status in (200, 409), answer.body

    @rule(pick=PICK)
    def cancel(self, pick: int):
        payment = self._pick(pick, states=AT_THE_BANK)
        if payment is None:
            return
        payment_cancel(payment=payment, actor=self.bank.user, presence=PRESENCE)

    # --- time and the bank's batches -------------------------------------------------------------------------

    @rule(minutes=st.integers(min_value=1, max_value=MOST_TIME_PER_STEP.seconds // 60))
    def time_passes(self, minutes: int):
        self._time_passes_by(timedelta(minutes=minutes))

    def _time_passes_by(self, delta: timedelta) -> None:
        seconds = math.ceil(delta.total_seconds())
        self._shift(timedelta(seconds=seconds))
        self._sandbox("/v1/sandbox/batches/run", {"advanceSeconds": seconds})

    @rule()
    def batches_run(self):
        self._run_batches()

    # --- the properties ----------------------------------------------------------------------------------------

    @invariant()
    def count_the_step(self):
        STATS.steps += 1

    @invariant()
    def at_most_one_payment_per_intent_at_the_bank(self):
        if self.bank is None:
            return
        for intent, rows in self._bank_by_intent().items():
            live = [r for r in rows if r[1] not in ENDED_AT_BANK]
            approved = [r for r in rows if r[2] is not None]
            if len(live) > 1 or len(approved) > 1:
                STATS.duplicates += 1
            assert len(live) <= 1, f"intent {intent}: the bank holds {len(live)} payments: {rows}"
            assert len(approved) <= 1, f"intent {intent}: the bank approved {len(approved)} payments: {rows}"

    @invariant()
    def one_payment_per_intent_in_the_portal(self):
        if self.bank is None:
            return
        intents = list(self._payments().values_list("intent_key", flat=True))
        assert len(intents) == len(set(intents)), intents

    @invariant()
    def never_not_sent_when_the_bank_holds_it(self):
        if self.bank is None:
            return
        not_sent = dict(self._payments().filter(state__in=NOT_SENT_STATES).values_list("request_id", "state"))
        held = _bank_rows(self.bank.database, [str(r) for r in not_sent])
        if held:
            STATS.lost += len(held)
        assert not held, f"the portal says {[not_sent[uuid.UUID(r[0])] for r in held]} for the bank's {held}"

    @invariant()
    def unknown_outcome_is_never_editable(self):
        if self.bank is None:
            return
        unknown = self._payments().filter(state__in=UNKNOWN_OUTCOME_STATES).values_list("pk", "state")
        for pk, state in unknown:
            if (pk, state) in self.edit_refused:  # its edit page was tried in this state already
                continue
            self.edit_refused.add((pk, state))
            page = self.client.get(f"/payments/{pk}/edit/")
            assert page.status_code == 302, (
                f"payment {pk} of unknown outcome: its edit page answered {page.status_code}"
            )
