package localaws

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"sync"
)

// tableMeta is what the front keeps about tables that minidyn does not:
// their names (for ListTables) and their TTL settings.
type tableMeta struct {
	mu     sync.Mutex
	tables map[string]bool
	ttl    map[string]string // TTL attribute by table; absent: disabled
}

// cli answers the calls an operator's AWS CLI makes to inspect tables,
// which minidyn refuses or answers with blanks: ListTables,
// DescribeTimeToLive, UpdateTimeToLive, DescribeContinuousBackups, a
// TableStatus in DescribeTable, and Count in Scan (Select=COUNT). It also
// watches CreateTable and DeleteTable to keep the table list.
func (d *dynamoFront) cli(op string, body []byte) (int, []byte) {
	var in struct {
		TableName               string
		Select                  string
		ExclusiveStartTableName string
		Limit                   int
		TimeToLiveSpecification struct {
			AttributeName string
			Enabled       bool
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return apiError(http.StatusBadRequest, "SerializationException", err.Error())
	}
	m := &d.meta
	switch op {
	case "CreateTable":
		status, out := d.createTable(in.TableName, body)
		if status == http.StatusOK {
			m.mu.Lock()
			if m.tables == nil {
				m.tables = map[string]bool{}
			}
			m.tables[in.TableName] = true
			m.mu.Unlock()
			out = activeStatus(out, "TableDescription")
		}
		return status, out
	case "UpdateTable":
		d.forgetTable(in.TableName)
		return d.allShards(op, in.TableName, body)
	case "DeleteTable":
		status, out := d.allShards(op, in.TableName, body)
		if status == http.StatusOK {
			m.mu.Lock()
			delete(m.tables, in.TableName)
			delete(m.ttl, in.TableName)
			m.mu.Unlock()
			d.forgetTable(in.TableName)
			d.dropTable(in.TableName)
		}
		return status, out
	case "DescribeTable":
		phys := physical(in.TableName, 0)
		status, out := d.call(0, op, map[string]string{"TableName": phys})
		if status == http.StatusNotFound || (status != http.StatusOK && errorType(out) == "ResourceNotFoundException") {
			return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found: Table: "+in.TableName+" not found")
		}
		out = renameResponse(out, phys, in.TableName)
		if status == http.StatusOK {
			out = activeStatus(out, "Table")
		}
		return status, out
	case "ListTables":
		m.mu.Lock()
		names := make([]string, 0, len(m.tables))
		for n := range m.tables {
			names = append(names, n)
		}
		m.mu.Unlock()
		sort.Strings(names)
		if in.ExclusiveStartTableName != "" {
			i, found := slices.BinarySearch(names, in.ExclusiveStartTableName)
			if found {
				i++
			}
			names = names[i:]
		}
		resp := map[string]any{}
		if in.Limit > 0 && len(names) > in.Limit {
			names = names[:in.Limit]
			resp["LastEvaluatedTableName"] = names[len(names)-1]
		}
		resp["TableNames"] = names
		return jsonOK(resp)
	case "UpdateTimeToLive":
		if _, err := d.keyNames(in.TableName); err != nil {
			return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
		}
		spec := in.TimeToLiveSpecification
		m.mu.Lock()
		if m.ttl == nil {
			m.ttl = map[string]string{}
		}
		if spec.Enabled {
			m.ttl[in.TableName] = spec.AttributeName
		} else {
			delete(m.ttl, in.TableName)
		}
		m.mu.Unlock()
		return jsonOK(map[string]any{"TimeToLiveSpecification": spec})
	case "DescribeTimeToLive":
		if _, err := d.keyNames(in.TableName); err != nil {
			return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
		}
		m.mu.Lock()
		attr, on := m.ttl[in.TableName]
		m.mu.Unlock()
		desc := map[string]any{"TimeToLiveStatus": "DISABLED"}
		if on {
			desc = map[string]any{"TimeToLiveStatus": "ENABLED", "AttributeName": attr}
		}
		return jsonOK(map[string]any{"TimeToLiveDescription": desc})
	case "DescribeContinuousBackups":
		if _, err := d.keyNames(in.TableName); err != nil {
			return apiError(http.StatusBadRequest, "TableNotFoundException", "Table not found: "+in.TableName)
		}
		// The embedded emulator keeps no backups: say so, as DynamoDB
		// describes a table without point-in-time recovery.
		return jsonOK(map[string]any{"ContinuousBackupsDescription": map[string]any{
			"ContinuousBackupsStatus":        "ENABLED",
			"PointInTimeRecoveryDescription": map[string]any{"PointInTimeRecoveryStatus": "DISABLED"},
		}})
	case "Scan":
		if _, err := d.info(in.TableName); err != nil {
			return apiError(http.StatusBadRequest, "ResourceNotFoundException", "Requested resource not found")
		}
		return d.scanShards(in.TableName, body, in.Select == "COUNT")
	}
	return d.callRaw(0, op, body)
}

// activeStatus sets an empty TableStatus under field to ACTIVE: a table
// minidyn describes is ready.
func activeStatus(out []byte, field string) []byte {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var resp map[string]any
	if dec.Decode(&resp) != nil {
		return out
	}
	t, ok := resp[field].(map[string]any)
	if !ok {
		return out
	}
	if s, _ := t["TableStatus"].(string); s == "" {
		t["TableStatus"] = "ACTIVE"
	}
	b, err := json.Marshal(resp)
	if err != nil {
		return out
	}
	return b
}

func jsonOK(v any) (int, []byte) {
	b, err := json.Marshal(v)
	if err != nil {
		return internalError(err)
	}
	return http.StatusOK, b
}
