/* Review queue keyboard shortcuts: j/k move, a approve, r reject, m merge, e edit, x select. No
   framework: each action clicks the item's real button, so htmx (or the plain form) does the request. */
(function () {
  "use strict";
  var list = document.querySelector("[data-review-queue]");
  if (!list) return;
  var current = null;

  function items() {
    return Array.prototype.slice.call(list.querySelectorAll(".review-item:not(.done)"));
  }
  // keepFocus: leave the keyboard focus where it is. A mouse click on a button must keep it, or
  // htmx loses track of which button submitted the form and posts it without its action.
  function focusItem(item, keepFocus) {
    if (current) current.classList.remove("current");
    current = item || null;
    if (!current) return;
    current.classList.add("current");
    if (keepFocus) return;
    current.focus({ preventScroll: true });
    current.scrollIntoView({ block: "nearest" });
  }
  function move(step) {
    var all = items();
    if (!all.length) return focusItem(null);
    var index = all.indexOf(current);
    index = index === -1 ? 0 : Math.min(all.length - 1, Math.max(0, index + step));
    focusItem(all[index]);
  }
  function press(action) {
    if (!current) move(0);
    if (!current) return;
    var button = current.querySelector('button[name=action][value="' + action + '"]');
    if (button) button.click();
  }
  function typing(target) {
    return target && (target.tagName === "TEXTAREA" || target.tagName === "SELECT" ||
      (target.tagName === "INPUT" && target.type !== "checkbox"));
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && typing(event.target) && current) { current.focus(); return; }
    // Enter in "Merge into #" merges (a plain Enter would submit with the form's first button).
    if (event.key === "Enter" && event.target.name === "into") {
      var item = event.target.closest(".review-item");
      if (item) { focusItem(item, true); press("merge"); event.preventDefault(); }
      return;
    }
    if (typing(event.target)) return;
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": press("approve"); break;
      case "r": press("reject"); break;
      case "m":
        if (!current) move(0);
        if (current) current.querySelector("input[name=into]").focus();
        break;
      case "x":
        if (!current) move(0);
        if (current) current.querySelector("input[type=checkbox][name=ids]").click();
        break;
      case "e":
        if (!current) move(0);
        if (!current) return;
        var details = current.querySelector("details.edit-box");
        details.open = true;
        current.querySelector("textarea").focus();
        break;
      default: return;
    }
    event.preventDefault();
  });

  // After htmx answered for an item: a success marks it done and moves on; an error stays put.
  // htmx counts a swapped 422 (the note saying why) as successful, so the status decides.
  document.body.addEventListener("htmx:afterRequest", function (event) {
    var item = event.detail.elt.closest && event.detail.elt.closest(".review-item");
    if (!item) return;
    var status = event.detail.xhr ? event.detail.xhr.status : 0;
    if (!event.detail.successful || status < 200 || status >= 300) {
      // The entry is still pending: keep it current, and a failed merge's id ready to be fixed.
      focusItem(item, true);
      var config = event.detail.requestConfig;
      var action = config && config.formData ? config.formData.get("action") : null;
      var into = item.querySelector("input[name=into]");
      if (action === "merge" && into) { into.focus(); into.select(); }
      return;
    }
    item.classList.add("done");
    item.querySelectorAll("button, input, textarea").forEach(function (el) { el.disabled = true; });
    var count = document.getElementById("review-count");
    if (count) count.textContent = String(items().length);
    if (item === current) { current.classList.remove("current"); current = null; move(0); }
  });

  list.addEventListener("click", function (event) {
    var item = event.target.closest(".review-item");
    if (!item || item.classList.contains("done")) return;
    focusItem(item, Boolean(event.target.closest("button, input, textarea, select, label, a, summary")));
  });
  move(0);
})();
