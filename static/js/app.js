// Small behaviours of the curator pages, kept out of the HTML so the Content-Security-Policy can
// forbid inline scripts: select a field's text on focus, submit a form when a select changes.
document.addEventListener("focusin", (event) => {
  if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
});
document.addEventListener("change", (event) => {
  if (event.target.matches && event.target.matches("[data-submit-on-change]") && event.target.form) {
    event.target.form.submit();
  }
});
