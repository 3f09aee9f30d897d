#!/usr/bin/env python3
"""Which of the framework probe's readings follows each run's host level (h24h, session 24;
issue 19 item 6).

  python3 bench/validate/host_reading_runs.py BUILD ROWS.json    # ROWS from host_arch_study.py --json

A run's host level: the median k* of its transformer rows at micro-batch 1 (host_arch_study.py,
k* relative to the model's reading, the geometric mean of the one-rank GPT pass and the ResNet's
over the op ratio 1.10) times that reading. Then, for each candidate reading in the run's merged
profile (compare_all.py's merge): the standard deviation over runs of log(level / reading); the
smaller, the better the reading follows the runs' training host. Then each run's level (us per
counted kernel, the probe's GPT over 237 counted kernels) and readings (ms).
"""
import glob
import json
import math
import os
import statistics as st
import sys
import tempfile

HERE=os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0,HERE)
import compare_all
rows=json.load(open(sys.argv[2]))
RATIO=1.10
def fig(e,key='median_s'):
    return e[key]*math.sqrt(1-e['gpu_busy_fraction']**2)
out={}
with tempfile.TemporaryDirectory() as tmp:
    for folder in sorted(glob.glob(os.path.join(HERE,'data','calibration','*library*'))):
        run=os.path.basename(folder)
        rs=[r for r in rows if r['run']==run and r['mb']==1 and not r['cls'].startswith('cnn')]
        if not rs: continue
        prof=compare_all.profile_for(sys.argv[1],folder,tmp)
        ents={}
        for e in json.load(open(prof))['framework']:
            if e.get('device','cuda')!='cuda' or 'elementwise_s' in e: continue
            if e['model']=='resnet' or e.get('hidden')==128: ents[(e['model'],e.get('ranks',1))]=e
        g,r=ents[('gpt',1)],ents[('resnet',1)]
        cur=math.sqrt(fig(g)*fig(r)/RATIO)
        level=st.median(x['kstar'] for x in rs)*cur
        c={'current geomean':cur,'gpt median':fig(g),'gpt min':g['min_s'],'resnet/ratio':fig(r)/RATIO}
        for k in ('ddp_median_s','fsdp_median_s','tp_median_s','llama_median_s','step_host_s'):
            if k in g: c['gpt '+k]=g[k]
        for k in ('ddp_median_s','fsdp_median_s','step_host_s'):
            if k in r: c['resnet '+k]=r[k]
        if ('gpt',2) in ents:
            c['gpt 2-rank']=fig(ents[('gpt',2)]); c['resnet 2-rank/ratio']=fig(ents[('resnet',2)])/RATIO
            c['current geomean (2-GPU runs)']=cur
            c['four']=math.exp(st.mean(math.log(x) for x in (fig(g),fig(r)/RATIO,c['gpt 2-rank'],c['resnet 2-rank/ratio'])))
        c['a constant']=1e-3
        out[run]=(level,c,len(rs))
names=sorted({k for _,c,_ in out.values() for k in c})
print(len(out),'runs')
for n in names:
    logs=[math.log(l/c[n]) for l,c,_ in out.values() if c.get(n)]
    if len(logs)>2: print(f'{n:28} runs {len(logs):2} sd {st.pstdev(logs):.3f} mean {st.mean(logs):+.3f}')
for run,(l,c,n) in out.items(): print(run[:34], n, round(l*1e6/237,1), ' '.join(f'{k[:10]}={v*1e3:.2f}' for k,v in c.items() if v))
