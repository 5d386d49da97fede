"""A message's row is stored whole in its heap page (sessions_app 0018): its search vector is not
compressed and moved into the TOAST table, which cost each message's write an extra row and each ranked
search a fetch from TOAST."""

import pytest
from django.db import connection

from sessions_app.models import Message

pytestmark = pytest.mark.django_db

# A turn and its answer as a conversation holds them (about 600 characters each, varied words): the answer's
# row (text, reply context and the vector of both) is over PostgreSQL's default threshold of 2,032 bytes.
QUESTION = (
    "We moved the billing workers off cron and onto the queue runner because the nightly invoices kept "
    "overlapping with the reconciliation job. Could you check whether the Stripe webhook handler still "
    "acknowledges duplicate events, why the ledger export sometimes misses refunds issued after midnight, "
    "and whether the staging database needs another replica before Thursday's migration rehearsal? "
    "Also, Maria asked about archiving stale customer tickets, rotating the payment gateway credentials, "
    "and documenting the incident timeline for last week's outage in the operations handbook."
)
ANSWER = (
    "The queue runner now retries each invoice three times with exponential backoff, and reconciliation "
    "waits for the runner's advisory lock before starting. Duplicate webhook events are acknowledged "
    "idempotently through the event identifier table. Refunds issued after midnight were filtered by the "
    "wrong timezone boundary; the export now converts timestamps to UTC first. Staging handles the "
    "rehearsal comfortably without another replica. Ticket archiving, credential rotation and the outage "
    "timeline are drafted as separate pull requests awaiting Maria's review tomorrow morning."
)


def _toast_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'sessions_app_message'::regclass"
        )
        (toast,) = cursor.fetchone()
        cursor.execute(f"SELECT count(*) FROM {toast}")
        return cursor.fetchone()[0]


def test_it_keeps_a_conversations_message_rows_whole(api, token_a, agent_a):
    before = _toast_rows()
    response = api.post(
        "/agents/agent-a/messages",
        {
            "session": "storage",
            "messages": [{"role": "user", "text": QUESTION}, {"role": "assistant", "text": ANSWER}],
        },
        token=token_a,
    )
    assert response.status_code == 200, response.content
    answer = Message.objects.get(session__agent=agent_a, role="assistant")
    assert answer.reply_to_text  # the row holds the question's text too
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT octet_length(text) + octet_length(reply_to_text) + pg_column_size(search_vector) "
            "FROM sessions_app_message WHERE id = %s",
            [answer.pk],
        )
        assert cursor.fetchone()[0] > 2100  # over the default threshold: TOAST would have taken it
    assert _toast_rows() == before
