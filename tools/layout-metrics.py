"""Counts of the code's layout at a commit, from `git show` (no build): per library crate its
files, top-level modules, lines, pub and pub(crate) items outside tests, lines over 100
characters; then the five longest functions outside tests (braces counted outside strings).

Usage: python3 tools/layout-metrics.py REV
"""
import subprocess,re,sys
rev=sys.argv[1]
files=subprocess.run(['git','ls-tree','-r','--name-only',rev],capture_output=True,text=True).stdout.split()
def text(f): return subprocess.run(['git','show',f'{rev}:{f}'],capture_output=True,text=True).stdout
crates={'compiler/src':'blaze-compiler','blazec/src':'blazec','runtime/src':'blaze-runtime','runtime/burn/src':'blaze-burn','ir/src':'blaze-ir'}
fns=[]
for prefix,name in crates.items():
    fs=[f for f in files if f.startswith(prefix+'/') and f.endswith('.rs') and not (prefix=='runtime/src' and f.startswith('runtime/src/../'))]
    if prefix=='runtime/src': fs=[f for f in fs if not f.startswith('runtime/burn')]
    if not fs: continue
    top=set()
    pub=crate=long100=lines=0
    for f in fs:
        t=text(f); ls=t.split('\n'); lines+=len(ls)
        rel=f[len(prefix)+1:]
        top.add(rel.split('/')[0].replace('.rs',''))
        code=t.split('#[cfg(test)]')[0]
        pub+=len(re.findall(r'^\s*pub (fn|struct|enum|const|type|trait|mod|static|use)\b',code,re.M))
        crate+=len(re.findall(r'^\s*pub\(crate\)',code,re.M))
        long100+=sum(1 for l in ls if len(l)>100)
        # function lengths
        for i,l in enumerate(ls):
            m=re.match(r'^\s*(pub(\([a-z]+\))? )?(async )?fn ([a-z_0-9]+)',l)
            if not m: continue
            depth=0; started=False
            for j in range(i,len(ls)):
                l2=re.sub(r'"(\\.|[^"\\])*"','""',ls[j]); l2=re.sub(r"'.'","''",l2); l2=l2.split('//')[0]
                depth+=l2.count('{')-l2.count('}')
                if '{' in l2: started=True
                if started and depth<=0: break
                if ls[j].rstrip().endswith(';') and not started: break
            if started: fns.append((j-i+1,f"{f}::{m.group(4)}"))
    top.discard('lib'); top.discard('main')
    print(f"{name}: {len(fs)} files, {len(top)} top-level modules, {lines} lines, pub {pub}, pub(crate) {crate}, lines>100 {long100}")
fns=[x for x in fns if '/tests' not in x[1] and not x[1].split('::')[1].startswith(('a_','the_','every_'))]
fns.sort(reverse=True)
print("longest:",'; '.join(f"{n} {f}" for n,f in fns[:5]))
