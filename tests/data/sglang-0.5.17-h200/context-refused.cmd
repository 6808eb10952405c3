== context-refused: sglang-server --model-path /models/llama8b --load-format dummy --port 30017 --context-length 262144
