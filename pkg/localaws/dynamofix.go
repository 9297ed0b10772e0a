package localaws

import (
	"bytes"
	"encoding/json"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// allOldFix wraps minidyn to answer PutItem with ReturnValues=ALL_OLD the
// way DynamoDB does: with the item the put replaced, or none for a new key.
// minidyn echoes the new item instead, which would make every claim look
// like a takeover. The fix reads the old item just before the put, with
// puts of this kind serialised so the read and the put see the same item.
type allOldFix struct {
	next  http.Handler
	keys  func(table string) []string
	locks [64]sync.Mutex // striped by item key: puts on one item serialise, others do not
}

const putItemTarget = "DynamoDB_20120810.PutItem"

func (f *allOldFix) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != putItemTarget {
		f.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in struct {
		TableName    string
		Item         map[string]json.RawMessage
		ReturnValues string
	}
	if json.Unmarshal(body, &in) != nil || in.ReturnValues != "ALL_OLD" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		f.next.ServeHTTP(w, r)
		return
	}
	key := f.key(in.TableName, in.Item)
	lock := &f.locks[stripe(in.TableName, key)]
	lock.Lock()
	defer lock.Unlock()
	old := f.get(r, in.TableName, key)
	rec := httptest.NewRecorder()
	r.Body = io.NopCloser(bytes.NewReader(body))
	f.next.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	if rec.Code == http.StatusOK {
		out, _ = json.Marshal(map[string]any{"Attributes": old})
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(out)
}

// key picks the key attributes out of an item.
func (f *allOldFix) key(table string, item map[string]json.RawMessage) map[string]json.RawMessage {
	key := map[string]json.RawMessage{}
	for _, k := range f.keys(table) {
		key[k] = item[k]
	}
	return key
}

func stripe(table string, key map[string]json.RawMessage) int {
	h := fnv.New32a()
	h.Write([]byte(table))
	b, _ := json.Marshal(key) // map keys marshal sorted: stable
	h.Write(b)
	return int(h.Sum32() % 64)
}

// get reads the current item under key through minidyn itself.
func (f *allOldFix) get(r *http.Request, table string, key map[string]json.RawMessage) map[string]json.RawMessage {
	body, _ := json.Marshal(map[string]any{"TableName": table, "Key": key, "ConsistentRead": true})
	req := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	req.Header = r.Header.Clone()
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
	rec := httptest.NewRecorder()
	f.next.ServeHTTP(rec, req)
	var out struct{ Item map[string]json.RawMessage }
	json.Unmarshal(rec.Body.Bytes(), &out)
	return out.Item
}
