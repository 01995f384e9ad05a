// Staff sandbox area: the "Copy" buttons beside each customerNumber (the number a tester types at the bank's SCA
// screen). No inline script (CSP): the buttons carry data-copy-from="<id of the read-only input>".
(function () {
  "use strict";

  function fallbackCopy(input) {
    input.focus();
    input.select();
    try {
      return document.execCommand("copy");
    } catch (e) {
      return false;
    }
  }

  function done(button, ok) {
    var label = button.getAttribute("data-label") || button.textContent;
    button.setAttribute("data-label", label);
    button.textContent = ok ? "Copied" : "Select and copy";
    button.setAttribute("aria-live", "polite");
    window.setTimeout(function () { button.textContent = label; }, 2000);
  }

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy-from]");
    if (!button) {
      return;
    }
    var input = document.getElementById(button.getAttribute("data-copy-from"));
    if (!input) {
      return;
    }
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(input.value).then(
        function () { done(button, true); },
        function () { done(button, fallbackCopy(input)); }
      );
    } else {
      done(button, fallbackCopy(input));
    }
  });
})();
