// The payment form's intent survives the browser's Back button (payments/views_initiation.py, _intent). The
// form page is never cached, so Back fetches it again with a new intent in its hidden field; the browser then
// puts back only what changed on the page before, never a hidden field. So the intent is also copied into a
// hidden text field: changed by this script, it is put back by the browser on Back (and reload), and the form
// posted again is recognised as the one already sent ("This form was sent already").
(function () {
  "use strict";
  var kept = document.querySelectorAll("input[data-intent-kept]");
  for (var i = 0; i < kept.length; i++) {
    var field = kept[i];
    var intent = field.form && field.form.elements.namedItem("intent");
    if (!field.value && intent) {
      field.value = intent.value;
    }
  }
})();
