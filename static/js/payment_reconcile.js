// The "Checking with the bank" page of a payment whose answer was lost (templates/payments/reconcile.html): while
// the payer is on the page, it presses "Check now" by itself once its time has come (the form's
// data-check-after, in seconds: the backoff or the bank's Retry-After). Inside the replay window that replays
// the very same request with the payer's own presence headers; the background never replays
// (docs/bank-interface.md, "Exactly once"). Only while the page is visible, and once per page load.
(function () {
  "use strict";

  var form = document.querySelector("form[data-check-after]");
  if (!form) {
    return;
  }
  var after = Math.max(0, parseInt(form.getAttribute("data-check-after"), 10) || 0) * 1000;
  var done = false;

  function check() {
    if (done || document.visibilityState !== "visible") {
      return;
    }
    done = true;
    form.submit();
  }

  window.setTimeout(function () {
    check();
    document.addEventListener("visibilitychange", check);
  }, after + 3000);
})();
