// The payment form: when the currency changes, the payment type code's help text says from which amount of that
// currency reporting to the tax authority is asked, at which exchange rate (its date and age) and with which
// margin. The texts come from the server (json_script "reporting-help": one per currency with a rate, and under
// "*" the text of the others with "{currency}" for the code); no inline script (CSP).
(function () {
  "use strict";

  var data = document.getElementById("reporting-help");
  var currency = document.getElementById("id_currency");
  var help = document.getElementById("id_regulatory_reporting_code_helptext");
  if (!data || !currency || !help) {
    return;
  }
  var texts = JSON.parse(data.textContent);

  function update() {
    var code = currency.value;
    var text = texts[code] || (texts["*"] || "").split("{currency}").join(code);
    if (code && text) {
      help.textContent = text;
    }
  }

  currency.addEventListener("change", update);
  update();
})();
