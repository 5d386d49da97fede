"""Text drawn faded (a review item once acted on, a message compaction archived) still reads at WCAG AA
contrast (4.5:1): the confirmation "Entry #12 approved." is what the curator reads next, and an archived
message's author and time are shown to be read."""

import pytest
from playwright.sync_api import expect

from sessions_app import services as session_services
from sessions_app.models import Message
from vault import services

pytestmark = pytest.mark.django_db(transaction=True)

# Each text's colour over its background, then the whole faded box (opacity) over what is behind it.
LOW_CONTRAST_JS = """
(root) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const over = (top, alpha, under) => [0, 1, 2].map(i => top[i] * alpha + under[i] * (1 - alpha));
  const background = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length && (c.length < 4 || c[3] > 0)) { layers.push(c); if (c.length < 4 || c[3] === 1) break; }
    }
    let color = [255, 255, 255];
    for (const c of layers.reverse()) color = over(c, c.length < 4 ? 1 : c[3], color);
    return color;
  };
  const luminance = (c) => {
    const [r, g, b] = c.map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const found = [];
  for (const el of root.querySelectorAll("*")) {
    if (![...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())) continue;
    const style = getComputedStyle(el);
    if (el.getBoundingClientRect().width < 1 || el.closest("[aria-hidden=true]")) continue;
    // A disabled control, and its label, need not contrast (WCAG 1.4.3: inactive components).
    if (el.closest(":disabled") || (el.closest("label") && el.closest("label").control?.disabled)) continue;
    let text = rgb(style.color), behind = background(el);
    text = over(text, text.length < 4 ? 1 : text[3], behind);
    for (let e = el; e; e = e.parentElement) {
      const opacity = Number(getComputedStyle(e).opacity);
      if (opacity < 1) {
        const under = e.parentElement ? background(e.parentElement) : [255, 255, 255];
        text = over(text, opacity, under);
        behind = over(behind, opacity, under);
      }
    }
    const [light, dark] = [luminance(text), luminance(behind)].sort((a, b) => b - a);
    const ratio = (light + 0.05) / (dark + 0.05);
    if (ratio < 4.5) found.push(`${ratio.toFixed(2)}:1 "${el.innerText.trim().slice(0, 40)}"`);
  }
  return found;
}
"""


def test_a_review_item_once_approved_and_an_archived_message_read_at_aa_contrast(logged_in, project, agent_a):
    services.review_policy_set(project=project, hold_agent_writes=True, hold_extracted=True)
    pending = services.entry_create(
        agent=agent_a, category="lessons", content="Retries need a jittered backoff"
    )
    result = session_services.messages_append(
        agent=agent_a,
        session_key="chat-faded",
        messages=[{"role": "user", "text": "Which region?"}, {"role": "assistant", "text": "Dublin."}],
    )
    Message.objects.filter(session=result.session, role="user").update(archived=True)
    page = logged_in

    page.goto("/projects/acme/review/")
    item = page.locator(f"#review-{pending.pk}")
    item.get_by_role("button", name="Approve").click()
    expect(item.get_by_role("status")).to_have_text(f"Entry #{pending.pk} approved.")
    expect(item).to_have_class("review-item done")
    problems = [f"review item: {p}" for p in item.evaluate(LOW_CONTRAST_JS)]

    page.goto(f"/projects/acme/agents/agent-a/sessions/{result.session.pk}/")
    archived = page.locator(".msg.archived")
    expect(archived).to_have_count(1)
    problems += [f"archived message: {p}" for p in archived.evaluate(LOW_CONTRAST_JS)]
    assert problems == [], "\n".join(problems)
