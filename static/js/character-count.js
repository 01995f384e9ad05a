// The character count of text fields with a length limit (templates/includes/character_count.html; GOV.UK
// Design System, "Character count"). The field has no maxlength attribute, so nothing typed or pasted is cut
// silently: the user sees how many characters remain, or how many are too many, and the server refuses a value
// that is too long with a message next to the field. Screen readers hear the count once the typing pauses
// (a polite live region), and the limit itself when they reach the field (its aria-describedby hint).
(function () {
  "use strict";

  function length(text) {
    return Array.from(text).length; // characters as the server counts them, not UTF-16 units
  }

  function message(hint, count) {
    var remaining = hint.limit - count;
    var over = remaining < 0;
    var n = Math.abs(remaining);
    var key = (over ? "over" : "remaining") + (n === 1 ? "One" : "Other");
    return { over: over, text: hint.element.dataset[key].replace("%(count)s", String(n)) };
  }

  function setUp(element) {
    var input = document.getElementById(element.getAttribute("data-character-count-for"));
    var limit = parseInt(element.getAttribute("data-maxlength"), 10);
    if (!input || !limit) {
      return;
    }
    var hint = { element: element, limit: limit };
    // The hint "You can enter up to N characters" stays for screen readers (the field's description); the
    // visible count replaces it on screen, and a separate live region speaks the count after a pause.
    element.classList.add("visually-hidden");
    var visible = document.createElement("p");
    visible.className = "help character-count-status";
    visible.setAttribute("aria-hidden", "true");
    var live = document.createElement("p");
    live.className = "visually-hidden";
    live.setAttribute("aria-live", "polite");
    element.parentNode.insertBefore(visible, element.nextSibling);
    element.parentNode.insertBefore(live, visible.nextSibling);

    var timer = null;
    function update(speak) {
      var result = message(hint, length(input.value));
      visible.textContent = result.text;
      visible.classList.toggle("character-count-over", result.over);
      input.classList.toggle("input-over-limit", result.over);
      if (speak) {
        window.clearTimeout(timer);
        timer = window.setTimeout(function () {
          live.textContent = message(hint, length(input.value)).text;
        }, 1000);
      }
    }
    input.addEventListener("input", function () {
      update(true);
    });
    // Back (or reload) puts typed values back after this script ran: count again once the page is shown.
    window.addEventListener("pageshow", function () {
      update(false);
    });
    update(false);
  }

  var hints = document.querySelectorAll("[data-character-count-for]");
  for (var i = 0; i < hints.length; i++) {
    setUp(hints[i]);
  }
})();
