"""Split a README.md of the old shape (everything in one page, before the
move into docs/) into the docs/ pages it became: split.py README.md, with
SPLIT_ROOT naming the folder to write docs/ under. Headings go up a level,
and links are rewritten to where their targets now live. remap.sh uses it
to carry a README edit made on an old branch over to docs/."""
import re, os, sys, posixpath
ROOT=os.environ['SPLIT_ROOT']
src=open(sys.argv[1]).read().split('\n')

# heading text (exact line) -> destination (relative to repo root)
DEST = {
 '## How it works': 'docs/explanation/architecture.md',
 '## What Loom promises': 'docs/explanation/promises.md',
 '## The template-set contract': 'docs/reference/template-sets.md',
 '### Children that outlive their parent: `loom.dev/delete-policy`': 'docs/how-to/keep-children.md',
 '### Cluster-scoped children: `clusterScoped`': 'docs/how-to/cluster-scoped-children.md',
 '### Validation': 'docs/reference/template-sets.md',
 "## The parent's API: `schema:` in loom.yaml": 'docs/reference/schema.md',
 '## Helm charts as sets: `chart:` in loom.yaml': 'docs/how-to/charts.md',
 '## Reading the cluster from templates': 'docs/how-to/lookups.md',
 '## Changing templates safely': 'docs/how-to/rollouts.md',
 '## Least privilege: `loom rbac` and per-set ServiceAccounts': 'docs/how-to/rbac-and-identity.md',
 '## The CLI': 'docs/reference/cli.md',
 '### How apply decides a child is unchanged': 'docs/explanation/how-apply-decides.md',
 '## Status': 'docs/reference/status.md',
 '## Installing Loom': 'docs/how-to/install.md',
 '## Operating Loom: metrics, dashboard and alerts': 'docs/reference/metrics.md',
 '### Alerts': 'docs/reference/alerts.md',
 '## Many replicas: `loom run --sharded`': 'docs/how-to/sharding.md',
 '## Running against any cluster': 'docs/how-to/run-against-a-cluster.md',
 '## The local cluster': 'docs/how-to/local-cluster.md',
 '## Tests': 'docs/how-to/run-the-tests.md',
 '## Benchmarks': 'docs/explanation/benchmarks.md',
 '## Layout': 'docs/explanation/architecture.md',
}
# level shift per file (number of '#' removed); default: min level - 1
SHIFT = {'docs/explanation/architecture.md': 0}
PREFIX = {'docs/explanation/architecture.md': '# Architecture\n\nHow Loom is built: the loop every parent goes through, the packages, and\nwhere each one lives.\n\n'}
SKIP_BEFORE = 98

def slug(h):
    h=h.strip().lower()
    h=re.sub(r'[^\w\- ]','',h)
    return h.replace(' ','-')

# parse into chunks
chunks=[]  # (dest, [lines])
fence=False; cur=None; curdest=None; parent2=None
for i,l in enumerate(src,1):
    if i<SKIP_BEFORE: continue
    if l.startswith('```'): fence=not fence
    m = None if fence or l.startswith('```') else re.match(r'^(#{2,6}) (.*)$',l)
    if m:
        lvl=len(m.group(1))
        if l in DEST: d=DEST[l]
        elif l.startswith('### Runbook: '): d='docs/runbooks/'+l[len('### Runbook: '):].strip()+'.md'
        elif lvl==2: raise SystemExit('no dest for '+l)
        elif lvl==3: d=parent2
        else: d=curdest
        if lvl==2: parent2=d
        if lvl==3 and l in DEST and DEST[l]!=parent2: pass
        curdest=d
        cur=[]; chunks.append((d,cur))
    cur.append(l)

# anchor -> file
anchor={}
for d,ls in chunks:
    fence=False
    for l in ls:
        if l.startswith('```'): fence=not fence; continue
        m=None if fence else re.match(r'^(#{2,6}) (.*)$',l)
        if m: anchor.setdefault(slug(m.group(2)),d)
first={}
for d,ls in chunks:
    for l in ls:
        m=re.match(r'^(#{2,6}) (.*)$',l)
        if m and d not in first: first[d]=slug(m.group(2))
        break
first['docs/explanation/architecture.md']='architecture'
MOVED={'docs/benchmarks.md':'docs/explanation/benchmark-history.md'}
def fix(line,dest):
    def rep(m):
        text,target=m.group(1),m.group(2)
        if re.match(r'^[a-z]+:',target): return m.group(0)
        if target.startswith('#'):
            a=target[1:]
            if a not in anchor: print('WARN unknown anchor',a,file=sys.stderr); return m.group(0)
            f=anchor[a]
            if f==dest: return '[%s](#%s)'%(text,a)
            r=posixpath.relpath(f,posixpath.dirname(dest))
            if first.get(f)==a: return '[%s](%s)'%(text,r)
            return '[%s](%s#%s)'%(text,r,a)
        path,_,frag=target.partition('#')
        path=MOVED.get(path,path)
        rel=posixpath.relpath(path,posixpath.dirname(dest))
        return '[%s](%s%s)'%(text,rel,('#'+frag) if frag else '')
    return re.sub(r'\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]+)\)',rep,line)

files={}
order=[]
for d,ls in chunks:
    if d not in files: files[d]=[]; order.append(d)
    files[d].append(ls)
for d in order:
    lvls=[]
    for ls in files[d]:
        fence=False
        for l in ls:
            if l.startswith('```'): fence=not fence; continue
            m=None if fence else re.match(r'^(#{2,6}) ',l)
            if m: lvls.append(len(m.group(1)))
    sh=SHIFT.get(d,min(lvls)-1)
    out=[]
    for ls in files[d]:
        fence=False
        for l in ls:
            if l.startswith('```'): fence=not fence; out.append(l); continue
            m=None if fence else re.match(r'^(#{2,6}) (.*)$',l)
            if m: l='#'*(len(m.group(1))-sh)+' '+m.group(2)
            out.append(fix(l,d) if not fence else l)
    text=PREFIX.get(d,'')+'\n'.join(out).rstrip('\n')+'\n'
    p=os.path.join(ROOT,d); os.makedirs(os.path.dirname(p),exist_ok=True)
    if os.path.exists(p) and d in ('docs/reference/alerts.md',): pass
    open(p,'w').write(text)
    pass
