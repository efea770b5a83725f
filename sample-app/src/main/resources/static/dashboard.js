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

  var COLOR = { alone: '#2da44e', together: '#cf222e', refused: '#8c959f', queue: '#0969da' };
  var SVG_WIDTH = 380;

  // For each section (sorted by entry), whether another buyer was inside at the same time.
  function overlaps(sections) {
    return sections.map(function (a, i) {
      return sections.some(function (b, j) {
        return i !== j && a.enteredMillis < b.leftMillis && b.enteredMillis < a.leftMillis;
      });
    });
  }

  // A tick step of 1, 2 or 5 times a power of ten giving about five ticks up to max.
  function tickStep(max) {
    var raw = max / 5, power = Math.pow(10, Math.floor(Math.log(raw) / Math.LN10));
    var step = [1, 2, 5, 10].map(function (f) { return f * power; }).filter(function (s) { return s >= raw; })[0];
    return step || raw;
  }

  function svgText(x, y, value, attrs) {
    return '<text x="' + x.toFixed(1) + '" y="' + y.toFixed(1) + '"' + (attrs || '') + '>' + text(value) + '</text>';
  }

  // The sale's timeline: a bar per buyer inside the guarded section, and below it the queue for the product lock,
  // on one time axis of scaleMillis (shared by both panels, so their lengths compare).
  function timelineSvg(result, scaleMillis) {
    var t = result.timeline;
    var sections = t.sections, together = overlaps(sections);
    var left = 26, right = 10, plotWidth = SVG_WIDTH - left - right;
    // one height for any crowd, so that the two panels' charts line up
    var barsTop = 18, barsHeight = 150, rowHeight = barsHeight / Math.max(sections.length, 10);
    var queueTop = barsTop + barsHeight + 28, queueHeight = 56;
    var axisY = queueTop + queueHeight + 4, height = axisY + 30;
    function x(ms) { return left + Math.min(ms, scaleMillis) / scaleMillis * plotWidth; }
    var out = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ' + SVG_WIDTH + ' ' + height + '"'
        + ' role="img" aria-label="timeline of the ' + text(result.mode) + ' sale">';
    var step = tickStep(scaleMillis);
    for (var tick = 0; tick <= scaleMillis + 1e-9; tick += step) {
      out += '<line x1="' + x(tick).toFixed(1) + '" x2="' + x(tick).toFixed(1) + '" y1="' + barsTop + '" y2="' + axisY
          + '" stroke="#eaeef2"/>' + svgText(x(tick), axisY + 12, Math.round(tick), ' text-anchor="middle" fill="#555"');
    }
    out += svgText(left + plotWidth, axisY + 25, 'ms after the buyers were let go', ' text-anchor="end" fill="#555"');
    out += svgText(left, barsTop - 6, sections.length + ' buyer' + (sections.length === 1 ? '' : 's')
        + ' got into the stock check', ' font-weight="bold" fill="#222"');
    sections.forEach(function (s, i) {
      var x1 = x(s.enteredMillis), width = Math.max(2.5, x(s.leftMillis) - x1);
      var kind = s.outcome !== 'sold' ? 'refused' : (together[i] ? 'together' : 'alone');
      out += '<rect class="section ' + kind + '" data-entered="' + s.enteredMillis + '" data-left="' + s.leftMillis + '" x="'
          + x1.toFixed(1) + '" y="' + (barsTop + i * rowHeight).toFixed(1) + '" width="' + width.toFixed(1)
          + '" height="' + Math.max(1, rowHeight - 1).toFixed(1) + '" fill="' + COLOR[kind] + '"><title>user ' + s.userId
          + ': ' + s.enteredMillis.toFixed(1) + '–' + s.leftMillis.toFixed(1) + ' ms, ' + s.outcome + '</title></rect>';
    });
    if (!t.lockKey) {
      out += svgText(left, queueTop - 6, 'No lock, so no queue: everyone goes in at once', ' font-weight="bold" fill="#222"');
    } else {
      var most = t.queue.reduce(function (m, p) { return Math.max(m, p.waiting); }, 0);
      var top = Math.max(most, 1);
      var y = function (waiting) { return queueTop + queueHeight - waiting / top * queueHeight; };
      out += svgText(left, queueTop - 6, 'Buyers queued for ' + t.lockKey + ' (at most ' + most + ')',
          ' font-weight="bold" fill="#222"');
      out += svgText(left - 4, y(top) + 4, top, ' text-anchor="end" fill="#555"')
          + svgText(left - 4, y(0), 0, ' text-anchor="end" fill="#555"');
      if (t.queue.length > 0) {
        var path = 'M' + x(t.queue[0].atMillis).toFixed(1) + ',' + y(0).toFixed(1);
        t.queue.forEach(function (p) {
          path += 'H' + x(p.atMillis).toFixed(1) + 'V' + y(p.waiting).toFixed(1);
        });
        path += 'H' + x(t.durationMillis).toFixed(1) + 'V' + y(0).toFixed(1) + 'Z';
        out += '<path class="queue" d="' + path + '" fill="' + COLOR.queue + '" fill-opacity="0.25" stroke="'
            + COLOR.queue + '" stroke-width="1.2"/>';
      }
    }
    if (t.keyClosed) {
      // the cliff in the queue: the sale that took the last item closed the key, and every queued buyer was told
      // the label goes on the side of the line with more room
      var xc = x(t.keyClosed.atMillis), onLeft = xc - left > left + plotWidth - xc;
      out += '<line class="key-closed" x1="' + xc.toFixed(1) + '" x2="' + xc.toFixed(1) + '" y1="' + barsTop + '" y2="'
          + axisY + '" stroke="#222" stroke-dasharray="3,3"/>'
          + svgText(xc + (onLeft ? -4 : 4), barsTop + barsHeight + 4, 'sold out, key closed: '
          + t.keyClosed.waitersTold + ' queued told', ' text-anchor="' + (onLeft ? 'end' : 'start') + '" fill="#222"');
    }
    out += '<line x1="' + left + '" x2="' + (left + plotWidth) + '" y1="' + axisY + '" y2="' + axisY + '" stroke="#888"/>';
    return out + '</svg>';
  }

  var latest = { locked: null, unsafe: null };

  function showSale(result) {
    var box = document.getElementById('sale-' + result.mode);
    var verdict = result.oversold > 0
        ? '<p class="bad verdict">oversold by ' + result.oversold + '</p>'
        : '<p class="ok verdict">no overselling</p>';
    box.innerHTML = '<h2>' + (result.mode === 'locked' ? 'With locks' : 'Without locks') + '</h2>' + verdict
        + '<div class="sale-body">' + table(['', ''], [
          ['items for sale', result.stock], ['buyers', result.buyers], ['orders placed', result.placed],
          ['told "sold out"', result.soldOut], ['other refusals', result.otherRefusals],
          ['items sold', result.sold], ['stock shown after', result.stockLeft], ['oversold', result.oversold]])
        + '<div class="timeline" id="timeline-' + result.mode + '"></div></div>';
    box.setAttribute('data-product', result.productId);
    box.setAttribute('data-placed', result.placed);
    box.setAttribute('data-oversold', result.oversold);
  }

  // Both panels on one time scale: the longer sale's.
  function showSales() {
    var shown = [latest.locked, latest.unsafe].filter(function (r) { return r; });
    var scale = Math.max.apply(null, shown.map(function (r) { return r.timeline.durationMillis; }).concat([1]));
    shown.forEach(function (result) {
      showSale(result);
      document.getElementById('timeline-' + result.mode).innerHTML = timelineSvg(result, scale);
    });
  }

  function showLatestSales() {
    request('GET', '/api/demo/flash-sales', function (status, sales) {
      if (status === 200 && sales) {
        latest.locked = sales.locked;
        latest.unsafe = sales.unsafe;
        showSales();
      }
      document.getElementById('sales').setAttribute('data-loaded', 'true');
    });
  }

  function runSale(mode, then) {
    var stock = document.getElementById('stock').value;
    var buyers = document.getElementById('buyers').value;
    document.getElementById('status').textContent = 'running the ' + mode + ' sale…';
    request('POST', '/api/demo/flash-sale?mode=' + mode + '&stock=' + encodeURIComponent(stock)
        + '&buyers=' + encodeURIComponent(buyers), function (status, result) {
      if (status === 200 && result) {
        latest[result.mode] = result;
        showSales();
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

  showLatestSales();
  showProducts();
  showLocks();
  window.setInterval(showLocks, 2000);
}());
