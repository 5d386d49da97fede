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
