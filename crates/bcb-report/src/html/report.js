(function(){
"use strict";
var root=document.documentElement;
document.getElementById('theme').addEventListener('click',function(){
  var dark=root.dataset.theme?root.dataset.theme==='dark':matchMedia('(prefers-color-scheme: dark)').matches;
  root.dataset.theme=dark?'light':'dark';
});
// Sorting: click a header; cells may carry data-sort (numbers), else their text.
document.querySelectorAll('table.sortable').forEach(function(table){
  table.querySelectorAll('th').forEach(function(th,col){
    th.addEventListener('click',function(){
      var asc=!th.classList.contains('asc');
      table.querySelectorAll('th').forEach(function(x){x.classList.remove('asc','desc');});
      th.classList.add(asc?'asc':'desc');
      var body=table.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      var key=function(r){var c=r.cells[col];var s=c.getAttribute('data-sort');return s!==null?parseFloat(s):c.textContent.toLowerCase();};
      rows.sort(function(a,b){var x=key(a),y=key(b);return (x<y?-1:x>y?1:0)*(asc?1:-1);});
      rows.forEach(function(r){body.appendChild(r);});
    });
  });
});
// Filtering the task table.
var q=document.getElementById('q'),cls=document.getElementById('cls'),shown=document.getElementById('shown');
function filter(){
  var text=q.value.trim().toLowerCase(),tag=cls.value,n=0,rows=document.getElementById('tasks').tBodies[0].rows;
  for(var i=0;i<rows.length;i++){
    var r=rows[i],ok=(!text||r.dataset.text.indexOf(text)>=0)&&(!tag||(' '+r.dataset.tags+' ').indexOf(' '+tag+' ')>=0);
    r.style.display=ok?'':'none';if(ok)n++;
  }
  shown.textContent=n+' of '+rows.length+' tasks';
}
q.addEventListener('input',filter);cls.addEventListener('change',filter);filter();
// Task view: prompt, code and tracebacks from the embedded, compressed data.
var models=JSON.parse(document.getElementById('models').textContent),data=null;
function load(){
  if(data)return Promise.resolve(data);
  var b64=document.getElementById('data').textContent.trim(),bin=atob(b64),bytes=new Uint8Array(bin.length);
  for(var i=0;i<bin.length;i++)bytes[i]=bin.charCodeAt(i);
  var stream=new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text().then(function(t){data=JSON.parse(t);return data;});
}
function el(tag,text,cls){var e=document.createElement(tag);if(text!==undefined)e.textContent=text;if(cls)e.className=cls;return e;}
var dlg=document.getElementById('detail'),body=document.getElementById('detail-body');
function show(id){
  load().then(function(all){
    var t=all[id];body.textContent='';
    if(!t){body.appendChild(el('p','No data for '+id));}
    else{
      body.appendChild(el('h2',id));
      var p=el('details');p.appendChild(el('summary','Prompt'));p.appendChild(el('pre',t.p));body.appendChild(p);
      t.m.forEach(function(samples,m){
        body.appendChild(el('h3',models[m]));
        if(!samples){body.appendChild(el('p','no samples for this task','muted'));return;}
        samples.forEach(function(s,i){
          var d=el('details');if(s.s!=='pass')d.open=true;
          d.appendChild(el('summary','sample '+i+': '+s.s+(s.k?' — '+s.k:'')+(s.f?' (flaky)':'')));
          d.appendChild(el('pre',s.c));
          s.d.forEach(function(x){d.appendChild(el('div',x[0],'small muted'));d.appendChild(el('pre',x[1]));});
          body.appendChild(d);
        });
      });
    }
    if(!dlg.open)dlg.showModal();
  }).catch(function(e){console.warn('cannot open task data: '+e);});
}
document.querySelectorAll('.strip svg').forEach(function(svg){
  svg.addEventListener('click',function(ev){var t=ev.target.getAttribute('data-t');if(t)location.hash='task/'+t;});
});
function route(){var h=decodeURIComponent(location.hash.slice(1));if(h.indexOf('task/')===0)show(h.slice(5));}
window.addEventListener('hashchange',route);
dlg.addEventListener('close',function(){if(location.hash)history.replaceState(null,'',location.pathname+location.search);});
route();
})();
