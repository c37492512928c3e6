"""Images (here: JSON records) served by an HTTP API, one request per sample."""

import requests
from torch.utils.data import Dataset

TIMEOUT = (5, 10)  # connect, read (seconds)


class RemoteImages(Dataset):
    def __init__(self, base_url, limit=64):
        self.base_url = base_url
        self.session = requests.Session()
        self.session.headers.update({"Accept": "application/json"})
        listing = self.session.get(f"{base_url}/list", params={"limit": limit}, timeout=TIMEOUT)
        listing.raise_for_status()
        self.ids = listing.json()

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, idx):
        item_id = self.ids[idx]
        response = self.session.get(f"{self.base_url}/item/{item_id}", timeout=TIMEOUT)
        response.raise_for_status()
        return item_id, response.json()
