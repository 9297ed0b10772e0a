package providersim_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookline/hookline/internal/dev/providersim"
)

// usageFace is one usage face as the fault vocabulary's test drives it.
type usageFace struct {
	admin string // the face's sim path, on its server
	// read makes one read call and returns its status and the face's
	// retry header.
	read func(t *testing.T) (int, string)
	// faults are the 429s and 5xx the face counted.
	faults func() (rateLimited, serverErrors int)
}

func stripeFace(t *testing.T) usageFace {
	f := newMeterFixture(t, providersim.Config{})
	q := summaryQuery("cus_a", day1, day1.Add(time.Hour), "hour")
	return usageFace{admin: f.sim.URL() + providersim.MeterSimPath,
		read: func(t *testing.T) (int, string) {
			status, h, _ := f.call(t, http.MethodGet, "/v1/billing/meters/"+f.meter.ID+"/event_summaries?"+q.Encode(), nil)
			return status, h.Get("Retry-After")
		},
		faults: func() (int, int) {
			c := f.sim.MeterCalls()
			return c.RateLimited[providersim.MeterSummariesEndpoint], c.ServerErrors
		}}
}

func openAIFace(t *testing.T) usageFace {
	sim, srv := openaiFace(t)
	return usageFace{admin: srv.URL + providersim.OpenAISimPath,
		read: func(t *testing.T) (int, string) {
			status, after, _ := openaiGet(t, srv, providersim.OpenAIAdminKey,
				"/v1/organization/usage/completions?start_time="+strconv.FormatInt(openaiDay.Unix(), 10))
			return status, after
		},
		faults: func() (int, int) { c := sim.OpenAICalls(); return c.RateLimited, c.ServerErrors }}
}

func openMeterFace(t *testing.T) usageFace {
	om := providersim.NewOpenMeter(providersim.OpenMeterConfig{})
	if err := om.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { om.Close() })
	return usageFace{admin: om.URL() + providersim.OpenMeterSimPath,
		read: func(t *testing.T) (int, string) {
			resp, err := http.Get(om.URL() + "/api/v2/events")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode, resp.Header.Get("Retry-After")
		},
		faults: func() (int, int) { c := om.OpenMeterCalls(); return c["rate_limited"], c["server_errors"] }}
}

func TestEveryUsageFaceTakesTheFaultVocabulary(t *testing.T) {
	tests := []struct {
		name      string
		face      func(*testing.T) usageFace
		retry     string // the retry header of a 429 asked to wait 2.5 s
		noDefault bool   // a 429 that asks for no wait carries no header
		meterLag  int    // the answer to a lag of one meter
	}{
		{name: "stripe meters", face: stripeFace, retry: "3", noDefault: true, meterLag: 204},
		{name: "openai", face: openAIFace, retry: "2500", meterLag: 400},
		{name: "openmeter", face: openMeterFace, retry: "3", meterLag: 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Given a face whose next call answers 503 over its sim path,
			f := tc.face(t)
			admin := func(path, body string, want int) {
				t.Helper()
				resp, err := http.Post(f.admin+path, "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("POST %s %s: %d, want %d", path, body, resp.StatusCode, want)
				}
			}
			admin("/fail", `{"next": 1, "status": 503}`, 204)
			// when it is read, then it answers 503, and the next call passes;
			if status, _ := f.read(t); status != 503 {
				t.Fatalf("first read: %d, want 503", status)
			}
			if status, _ := f.read(t); status != 200 {
				t.Fatalf("after the 5xx: %d, want 200", status)
			}
			// and a 429 carries the face's Retry-After, or none when asked
			// for none (Stripe's own 429s have none).
			admin("/fail", `{"next": 1, "retry_after": "2500ms"}`, 204)
			if status, retry := f.read(t); status != 429 || retry != tc.retry {
				t.Fatalf("429: %d retry %q, want 429 retry %q", status, retry, tc.retry)
			}
			admin("/fail", `{"next": 1}`, 204)
			if status, retry := f.read(t); status != 429 || (retry == "") != tc.noDefault {
				t.Fatalf("default 429: %d retry %q", status, retry)
			}
			admin("/fail", `{"next": 1, "retry_after": "-1s"}`, 204)
			if status, retry := f.read(t); status != 429 || retry != "" {
				t.Fatalf("429 without a wait: %d retry %q", status, retry)
			}
			if rl, se := f.faults(); rl != 3 || se != 1 {
				t.Fatalf("counted %d 429s and %d 5xx, want 3 and 1", rl, se)
			}
			// And what the vocabulary refuses, every face refuses alike.
			admin("/fail", `{"next": 1, "status": 404}`, 400)
			admin("/fail", `{"endpoint": "bogus", "next": 1}`, 400)
			admin("/ratelimit", `{"endpoint": "bogus", "per_second": 1}`, 400)
			admin("/lag", `{"lag": "soon"}`, 400)
			admin("/lag", `{"lag": "1m"}`, 204)
			admin("/lag", `{"meter": "mtr_x", "lag": "1m"}`, tc.meterLag)
		})
	}
}

func TestMeterSummariesEndEarly(t *testing.T) {
	// Given usage in five hours and a face whose pages end after two
	f := newMeterFixture(t, providersim.Config{})
	for h := range 5 {
		f.mustEvent(t, "cus_a", "1", "h"+strconv.Itoa(h), day1.Add(time.Duration(h)*time.Hour))
	}
	if status, data := adminCall(t, f.sim, http.MethodPost, providersim.MeterSimPath+"/pagesize", map[string]int{"buckets": 2}); status != 204 {
		t.Fatalf("pagesize: %d %s", status, data)
	}
	q := summaryQuery("cus_a", day1, day1.Add(24*time.Hour), "hour")

	// When the day is listed with a limit of 10, following has_more
	var got []int64
	for page := 0; ; page++ {
		status, list, e := f.summaries(t, q)
		if status != 200 || page > 5 {
			t.Fatalf("page %d: %d %+v", page, status, e)
		}
		for _, s := range list.Data {
			got = append(got, s.StartTime)
		}
		if !list.HasMore {
			break
		}
		if len(list.Data) != 2 {
			t.Fatalf("page %d has %d summaries with more to come, want 2", page, len(list.Data))
		}
		q.Set("starting_after", list.Data[len(list.Data)-1].ID)
	}

	// Then every hour comes once, in three pages, two of them short
	if len(got) != 5 || got[0] != day1.Unix() || got[4] != day1.Add(4*time.Hour).Unix() {
		t.Fatalf("starts %v", got)
	}
	if c := f.sim.MeterCalls(); c.ShortPages != 2 || c.Summaries != 3 {
		t.Fatalf("calls %+v, want 3 pages of which 2 ended early", c)
	}
}

func TestEveryUsageFaceRecordsTheWaitsItNamed(t *testing.T) {
	tests := []struct {
		name  string
		face  func(*testing.T) usageFace
		retry string // the retry header of a 503 asked to wait a minute
	}{
		{name: "stripe meters", face: stripeFace, retry: "60"},
		{name: "openai", face: openAIFace, retry: "60000"},
		{name: "openmeter", face: openMeterFace, retry: "60"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// Given a face whose next call answers 503 with a wait of a
			// minute, and whose 5xx otherwise names none,
			f := tc.face(t)
			post := func(body string) {
				t.Helper()
				resp, err := http.Post(f.admin+"/fail", "application/json", strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 204 {
					t.Fatalf("POST /fail %s: %d", body, resp.StatusCode)
				}
			}
			post(`{"next": 1, "status": 500}`)
			if status, retry := f.read(t); status != 500 || retry != "" {
				t.Fatalf("a 5xx asked for no wait: %d retry %q", status, retry)
			}
			post(`{"next": 1, "status": 503, "retry_after": "1m"}`)
			// when a client reads, and at once reads again,
			if status, retry := f.read(t); status != 503 || retry != tc.retry {
				t.Fatalf("503: %d retry %q, want retry %q", status, retry, tc.retry)
			}
			if status, _ := f.read(t); status != 200 {
				t.Fatalf("after the 503: %d", status)
			}
			// then the face recorded the one wait it named, and the call
			// that came too early, over its sim path as well.
			resp, err := http.Get(f.admin + "/waits")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var got []providersim.RetryAfterServed
			if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0].Status != 503 || time.Duration(got[0].Wait) != time.Minute || got[0].Next.IsZero() || !got[0].Early() {
				t.Fatalf("waits %+v, want one 503 of a minute, called again early", got)
			}
		})
	}
}
