package usagein

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
)

// CloudEventKeyPrefix starts every ledger key of a CloudEvent.
const CloudEventKeyPrefix = "ce_"

// CloudEventKey is the ledger key of the CloudEvent (ceSource, ceID)
// received on the hookline source named source: "ce_" and the hex SHA-256
// of "ce:<source>:<len(ceSource)>:<ceSource>:<ceID>". The spec makes source
// and id together the event's identity; the hookline source scopes it, so
// that two producers' events never share a key; the length prefix keeps
// ("a:b", "c") and ("a", "b:c") apart; and the hash bounds a key whose
// source URI may be long and hold any character. An export adapter that
// reads the same events derives the same key.
func CloudEventKey(source, ceSource, ceID string) string {
	h := sha256.New()
	h.Write([]byte("ce:" + source + ":" + strconv.Itoa(len(ceSource)) + ":"))
	h.Write([]byte(ceSource))
	h.Write([]byte{':'})
	h.Write([]byte(ceID))
	return CloudEventKeyPrefix + hex.EncodeToString(h.Sum(nil))
}
