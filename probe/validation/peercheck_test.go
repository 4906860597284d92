package validation

import (
	"fmt"
	"testing"
)

func TestPeerPrint(t *testing.T) {
	rows, err := Peer("../testdata/peer")
	if err != nil {
		t.Log(err)
	}
	for _, r := range rows {
		fmt.Printf("%+v\nprefill err %.3f itl err %.3f rate err %.3f ok %v\n", r, r.PrefillErr(), r.ITLErr(), r.RateErr(), r.OK())
	}
}
