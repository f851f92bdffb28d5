import sys, numpy as np, time
from tokenizers import Tokenizer, models, trainers, pre_tokenizers, decoders
V=int(sys.argv[1])
t=time.time()
tok=Tokenizer(models.BPE())
tok.pre_tokenizer=pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder=decoders.ByteLevel()
tr=trainers.BpeTrainer(vocab_size=V, special_tokens=["<|endoftext|>","<|sep|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
text=open("/tmp/exp/corpus.txt").read()
docs=text.split("\n<|endoftext|>\n")
tok.train_from_iterator(docs, tr)
enc=tok.encode_batch(docs)
ids=[]
for e in enc: ids.extend(e.ids); ids.append(0)
a=np.array(ids,dtype=np.uint16); np.save(f"/tmp/exp/tok{V}.npy",a)
print(V, tok.get_vocab_size(), len(a), time.time()-t)
