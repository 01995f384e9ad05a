// "Copy the address" beside a read-only address (the payment page's link for the next signer): a button with
// data-copy="<id of the input>" is shown once this script runs, and copies the input's value. The status beside
// it (role="status") says it was copied, or, where the browser refuses, to select and copy it by hand. Without
// the script the button stays hidden and the address can still be selected. No inline script (CSP).
(function () {
  "use strict";

  function say(button, text) {
    var status = button.parentNode.querySelector(".copy-status");
    if (status) {
      status.textContent = text;
    }
  }

  function selectAll(input) {
    input.focus();
    input.select();
  }

  function copy(button) {
    var input = document.getElementById(button.getAttribute("data-copy"));
    if (!input) {
      return;
    }
    var done = function () { say(button, button.getAttribute("data-copied")); };
    var failed = function () {
      selectAll(input);
      say(button, button.getAttribute("data-copy-failed"));
    };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(input.value).then(done, failed);
      return;
    }
    selectAll(input);
    try {
      if (document.execCommand("copy")) {
        done();
        return;
      }
    } catch (error) {
      // fall through: the address stays selected for the user to copy
    }
    failed();
  }

  function start() {
    var buttons = document.querySelectorAll("button[data-copy]");
    for (var i = 0; i < buttons.length; i++) {
      buttons[i].hidden = false;
      buttons[i].addEventListener("click", function (event) {
        copy(event.currentTarget);
      });
    }
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
