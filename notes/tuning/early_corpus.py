import ast, sys, os, pathlib, time
t=time.time()
roots=[pathlib.Path(os.__file__).parent]
import numpy, scipy, pandas, torch
roots += [pathlib.Path(m.__file__).parent for m in (numpy, scipy, pandas, torch)]
docs=[]
for r in roots:
    for p in sorted(r.rglob("*.py")):
        if "test" in p.parts or "site-packages" in p.parts and r.name=="python3.11": continue
        try: tree=ast.parse(p.read_text(errors="ignore"))
        except Exception: continue
        for node in ast.walk(tree):
            if isinstance(node,(ast.Module,ast.ClassDef,ast.FunctionDef,ast.AsyncFunctionDef)):
                d=ast.get_docstring(node)
                if d and len(d)>40: docs.append(d)
text="\n<|endoftext|>\n".join(docs)
open("/tmp/exp/corpus.txt","w").write(text)
print(len(docs), len(text), time.time()-t)
