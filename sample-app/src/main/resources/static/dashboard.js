// The dashboard: plain JavaScript and XMLHttpRequest, no build step.
(function () {
  'use strict';

  function request(method, url, done) {
    var xhr = new XMLHttpRequest();
    xhr.open(method, url, true);
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.onreadystatechange = function () {
      if (xhr.readyState === 4) {
        var body = null;
        try { body = JSON.parse(xhr.responseText); } catch (e) { body = null; }
        done(xhr.status, body);
      }
    };
    xhr.send();
  }

  function text(value) {
    return String(value).replace(/[&<>"]/g, function (c) {
      return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c];
    });
  }

  function table(headers, rows) {
    var html = '<table><tr>' + headers.map(function (h) { return '<th>' + text(h) + '</th>'; }).join('') + '</tr>';
    rows.forEach(function (row) {
      html += '<tr>' + row.map(function (cell) { return '<td>' + text(cell) + '</td>'; }).join('') + '</tr>';
    });
    return html + '</table>';
  }

  function showProducts() {
    request('GET', '/api/products', function (status, products) {
      var target = document.getElementById('products');
      if (status !== 200 || !products) { target.textContent = 'products unavailable (' + status + ')'; return; }
      target.innerHTML = products.length === 0 ? '<p>no products</p>' : table(['id', 'name', 'stock', 'sold'],
          products.map(function (p) { return [p.id, p.name, p.stock, p.sold]; }));
    });
  }

  function showLocks() {
    request('GET', '/actuator/distlock', function (status, report) {
      var target = document.getElementById('locks');
      if (status !== 200 || !report) { target.textContent = 'lock report unavailable (' + status + ')'; return; }
      if (report.held.length === 0 && report.waiting.length === 0) {
        target.innerHTML = '<p id="no-locks">no lock held, nobody waiting</p>';
        return;
      }
      target.innerHTML = table(['key', 'state', 'call', 'thread', 'for (ms)'],
          report.held.map(function (l) { return [l.key, 'held', l.name, l.thread, l.heldForMillis]; })
            .concat(report.waiting.map(function (w) { return [w.key, 'waiting', w.name, w.thread, w.waitingForMillis]; })));
    });
  }

  function showSale(result) {
    var box = document.getElementById('sale-' + result.mode);
    var verdict = result.oversold > 0
        ? '<p class="bad verdict">oversold by ' + result.oversold + '</p>'
        : '<p class="ok verdict">no overselling</p>';
    box.innerHTML = '<h2>' + (result.mode === 'locked' ? 'With locks' : 'Without locks') + '</h2>' + verdict
        + table(['', ''], [
          ['items for sale', result.stock], ['buyers', result.buyers], ['orders placed', result.placed],
          ['told "sold out"', result.soldOut], ['other refusals', result.otherRefusals],
          ['items sold', result.sold], ['stock shown after', result.stockLeft], ['oversold', result.oversold]]);
    box.setAttribute('data-placed', result.placed);
    box.setAttribute('data-oversold', result.oversold);
  }

  function runSale(mode, then) {
    var stock = document.getElementById('stock').value;
    var buyers = document.getElementById('buyers').value;
    document.getElementById('status').textContent = 'running the ' + mode + ' sale…';
    request('POST', '/api/demo/flash-sale?mode=' + mode + '&stock=' + encodeURIComponent(stock)
        + '&buyers=' + encodeURIComponent(buyers), function (status, result) {
      if (status === 200 && result) {
        showSale(result);
        document.getElementById('status').textContent = '';
      } else {
        document.getElementById('status').textContent = 'the ' + mode + ' sale failed (' + status + ')';
      }
      showProducts();
      showLocks();
      if (then) { then(); }
    });
  }

  document.getElementById('run-locked').onclick = function () { runSale('locked'); };
  document.getElementById('run-unsafe').onclick = function () { runSale('unsafe'); };
  document.getElementById('run-both').onclick = function () {
    runSale('locked', function () { runSale('unsafe'); });
  };

  showProducts();
  showLocks();
  window.setInterval(showLocks, 2000);
}());
