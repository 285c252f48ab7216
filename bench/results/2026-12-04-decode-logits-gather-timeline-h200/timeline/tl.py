import sys, statistics as st
def pct(v, p): v=sorted(v); return v[min(len(v)-1, int(p*len(v)))]
for f in sys.argv[1:]:
    rows=[l.split() for l in open(f) if l.startswith('TL ')]
    kind = 'gather' if 'gather' in f.split('/')[-1] else 'dlogits'
    t0s=[int(r[4]) for r in rows]; base=min(t0s)
    print(f, len(rows), 'blocks')
    if kind=='dlogits':
        s=[(int(r[4])-base)/1e3 for r in rows]; a=[(int(r[5])-base)/1e3 for r in rows]; e=[(int(r[6])-base)/1e3 for r in rows]
        first=[x-y for x,y in zip(a,s)]; dur=[x-y for x,y in zip(e,s)]
        for name,v in (('start',s),('first tile in',a),('end',e),('first-tile latency',first),('block duration',dur)):
            print('  %-20s min %6.2f p10 %6.2f p50 %6.2f p90 %6.2f max %6.2f us' % (name, min(v), pct(v,.1), pct(v,.5), pct(v,.9), max(v)))
        # per-SM: blocks and last end
        sm={}
        for r,x in zip(rows,e): sm.setdefault(int(r[3]),[]).append(x)
        ends=[max(v) for v in sm.values()]; nb=[len(v) for v in sm.values()]
        print('  SMs %d, blocks per SM %s; SM last end p10 %.2f p50 %.2f max %.2f' % (len(sm), sorted(set(nb)), pct(ends,.1), pct(ends,.5), max(ends)))
        # data rate over time: tiles finished
        tot=sum(int(r[7]) for r in rows)
        print('  tiles', tot, ' span', max(e), 'us; end-time of 50%%/90%%/99%% of blocks %.2f %.2f %.2f' % (pct(e,.5), pct(e,.9), pct(e,.99)))
    else:
        s=[(int(r[4])-base)/1e3 for r in rows]; sl=[(int(r[5])-base)/1e3 for r in rows]; en=[(int(r[6])-base)/1e3 for r in rows]; e=[(int(r[7])-base)/1e3 for r in rows]
        for name,v in (('start',s),('slot in',sl),('entry in',en),('end',e),('slot latency',[x-y for x,y in zip(sl,s)]),('entry latency',[x-y for x,y in zip(en,sl)]),('store issue',[x-y for x,y in zip(e,en)])):
            print('  %-20s min %6.2f p10 %6.2f p50 %6.2f p90 %6.2f max %6.2f us' % (name, min(v), pct(v,.1), pct(v,.5), pct(v,.9), max(v)))
