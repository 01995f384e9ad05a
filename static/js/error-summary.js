// The error summary of a form (templates/includes/form_errors.html; GOV.UK Design System, "Error summary"): when
// the page loads with one, move the focus to it, so that it is seen first and a screen reader reads it; a link in
// it moves the focus to its field and shows the field's label too (a plain link would scroll the label away).
(function () {
  "use strict";

  var summary = document.querySelector("[data-error-summary]");
  if (!summary) {
    return;
  }
  summary.setAttribute("tabindex", "-1");
  summary.addEventListener("blur", function () {
    summary.removeAttribute("tabindex"); // not a stop of the Tab key once left
  });
  summary.focus();

  summary.addEventListener("click", function (event) {
    var link = event.target.closest ? event.target.closest("a[href^='#']") : null;
    if (!link) {
      return;
    }
    var input = document.getElementById(link.getAttribute("href").slice(1));
    if (!input) {
      return;
    }
    event.preventDefault();
    (input.closest(".field") || input).scrollIntoView(); // the field's box: its label, error and input
    input.focus({ preventScroll: true });
  });
})();
