// Small behaviours of the curator pages, kept out of the HTML so the Content-Security-Policy can
// forbid inline scripts: select a field's text on focus. (No select submits its form on change: moving
// through its options with the arrow keys would leave the page at the first step; a button submits.)
document.addEventListener("focusin", (event) => {
  if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
});
// The header box on the search page ([data-search-into]) and the page's words field show the same words;
// what is typed in the header box is searched by the page's form, with its filters (its htmx trigger is
// the input event of its words field), and Enter in it loads the search page with those filters.
document.addEventListener("input", (event) => {
  const target = event.target;
  if (!target.matches) return;
  if (target.matches("[data-search-into]")) {
    const into = document.getElementById(target.dataset.searchInto);
    if (into && into.value !== target.value) {
      into.value = target.value;
      into.dispatchEvent(new Event("input", { bubbles: true }));
    }
  } else {
    document.querySelectorAll("[data-search-into]").forEach((box) => {
      if (box.dataset.searchInto === target.id) box.value = target.value;
    });
  }
});
document.addEventListener("submit", (event) => {
  const box = event.target.querySelector && event.target.querySelector("[data-search-into]");
  const into = box && document.getElementById(box.dataset.searchInto);
  if (!into || !into.form) return;
  event.preventDefault();
  into.value = box.value;
  into.form.submit();
});

// A failed htmx request says so in the page's notice area (base.html). htmx swaps nothing on these
// answers (422, a form with its errors, is swapped as usual), so what the curator typed stays put.
(function () {
  "use strict";
  function failure(status) {
    if (status === 403) {
      return "Your session changed (logged out or in again elsewhere): reload the page. " +
        "What you typed is still here; copy it before reloading.";
    }
    if (status === 404) return "This no longer exists: it was probably deleted elsewhere. Reload the page to see what is left.";
    if (status === 429) return "Too many requests: wait a moment, then try again.";
    if (status >= 500) return "Something went wrong on the server (error " + status + "). What you typed is kept: try again in a moment.";
    return "The server refused this (error " + status + "). Reload the page and try again.";
  }
  function show(text) {
    var notice = document.getElementById("page-notice");
    if (!notice) return;
    var message = document.createElement("p");
    message.textContent = text;
    var dismiss = document.createElement("button");
    dismiss.type = "button";
    dismiss.className = "link-button";
    dismiss.textContent = "Dismiss";
    dismiss.setAttribute("data-dismiss-notice", "");
    notice.replaceChildren(message, dismiss);
  }
  function clear() {
    var notice = document.getElementById("page-notice");
    if (notice) notice.replaceChildren();
  }
  document.addEventListener("htmx:responseError", function (event) { show(failure(event.detail.xhr.status)); });
  document.addEventListener("htmx:sendError", function () {
    show("Could not reach the server: check the connection and try again. What you typed is kept.");
  });
  document.addEventListener("htmx:timeout", function () {
    show("The server took too long to answer: try again. What you typed is kept.");
  });
  document.addEventListener("htmx:afterRequest", function (event) {
    var xhr = event.detail.xhr;
    if (event.detail.successful && xhr && xhr.status < 400) clear();
  });
  document.addEventListener("click", function (event) {
    if (event.target.closest && event.target.closest("[data-dismiss-notice]")) clear();
  });

  // A form that posts the whole page (no htmx) with typed text in it (the file editor, a new entry,
  // the project context): with the server down the browser would leave for its own error page, and
  // the text would be lost (Back loads the page again: it is not cached). The health check is asked
  // first; unreachable, or answering an error, the page says so and stays, text and all.
  var checked = null;
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (event.defaultPrevented || !form.matches || !form.matches("form[method=post]:not([hx-post])")) return;
    if (!form.querySelector("textarea")) return;
    if (checked === form) { checked = null; return; }
    event.preventDefault();
    var submitter = event.submitter || null;
    fetch(document.body.getAttribute("data-health-url"), { method: "HEAD", cache: "no-store" }).then(
      function (response) {
        if (response.status >= 500) { show(failure(response.status)); return; }
        checked = form;
        form.requestSubmit(submitter);
      },
      function () { show("Could not reach the server: check the connection and try again. What you typed is kept."); }
    );
  });
})();

// After htmx swaps content in, the keyboard focus goes where it says (data-focus: a selector looked
// up in it, then in the page; empty: the element itself; data-focus-else: the selector tried next),
// not to the page's body. Never taken from a field the curator has moved to meanwhile.
document.addEventListener("htmx:afterSettle", (event) => {
  const root = event.target;
  if (!root.matches) return;
  const holder = root.matches("[data-focus]") ? root : root.querySelector("[data-focus]");
  if (!holder || !holder.isConnected) return;
  const active = document.activeElement;
  if (active && active !== document.body && active.isConnected && !holder.contains(active)) return;
  const find = (selector) => {
    if (selector === null) return null;
    return selector === "" ? holder : holder.querySelector(selector) || document.querySelector(selector);
  };
  const target = find(holder.getAttribute("data-focus")) || find(holder.getAttribute("data-focus-else"));
  if (target) target.focus();
});

// Escape answers "no" to an open confirmation (deleting an entry, revoking a token), as its Cancel
// does, whether the focus is in it or on the button that opened it; Cancel then puts the focus back.
document.addEventListener("keydown", (event) => {
  if (event.key !== "Escape" || event.defaultPrevented) return;
  const main = document.getElementById("main");
  for (let el = document.activeElement; el && el !== main && el !== document.body; el = el.parentElement) {
    const cancel = el.querySelector("[role=alertdialog] [data-confirm-cancel]");
    if (cancel) {
      event.preventDefault();
      cancel.click();
      return;
    }
  }
});

// A link drawn as a button (Edit, Delete, Revoke...) answers Space as a button does, not only Enter.
document.addEventListener("keydown", (event) => {
  const target = event.target;
  if (event.key !== " " || event.defaultPrevented || !target.matches || !target.matches("a.button[href]")) return;
  if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
  event.preventDefault();
  target.click();
});

// A swap that replaces the focused element (a tab, a pager link): htmx focuses the element of the same
// id in the new content. Where there is none (the last page has no "Older" link), the focus goes to the
// element the old one's data-refocus names, not to the page's body, where the next Tab starts over.
(function () {
  "use strict";
  var refocus = null;
  document.addEventListener("htmx:beforeSwap", function () {
    var active = document.activeElement;
    refocus = active && active.getAttribute ? active.getAttribute("data-refocus") : null;
  });
  document.addEventListener("htmx:afterSettle", function () {
    var selector = refocus;
    refocus = null;
    if (!selector || (document.activeElement && document.activeElement !== document.body)) return;
    var target = document.querySelector(selector);
    if (target) target.focus();
  });
})();
