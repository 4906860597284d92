package diagnosis

// The serving engines a run can read register their catalogues when
// imported: every front end that runs the pipeline reads them all.
import (
	_ "github.com/llmdoctor/llmdoctor/collectors/sglang"
	_ "github.com/llmdoctor/llmdoctor/collectors/vllm"
)
